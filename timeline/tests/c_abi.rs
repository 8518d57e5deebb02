//! A C program compiled against include/loupe_timeline.h and linked to libloupe_timeline.so
//! and to libloupe_timeline.a logs a known sequence; the reader reads it back exactly.

use std::path::{Path, PathBuf};
use std::process::Command;

use loupe_timeline::reader::Tailer;

fn cc() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    Command::new(&cc).arg("--version").output().ok().filter(|o| o.status.success()).map(|_| cc)
}

/// Where this build's `libloupe_timeline.{so,a}` are: `cargo test` builds them into
/// `target/<profile>/deps/` and only `cargo build` copies them up to `target/<profile>/`, so
/// the newer of the two (a stale copy up there would test old code).
fn lib_dir(file: &str) -> PathBuf {
    // The test writer binary sits in target/<profile>/.
    let up = Path::new(env!("CARGO_BIN_EXE_loupe-tl-testwriter")).parent().unwrap().to_path_buf();
    let deps = up.join("deps");
    let mtime = |d: &Path| std::fs::metadata(d.join(file)).and_then(|m| m.modified()).ok();
    match (mtime(&up), mtime(&deps)) {
        (Some(a), Some(b)) if a >= b => up,
        (_, Some(_)) => deps,
        _ => up,
    }
}

fn build(cc: &str, out: &Path, shared: bool) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = lib_dir(if shared { "libloupe_timeline.so" } else { "libloupe_timeline.a" });
    let exe = out.join(if shared { "writer_so" } else { "writer_a" });
    let mut cmd = Command::new(cc);
    cmd.args(["-O2", "-Wall", "-Werror", "-I"]).arg(crate_dir.join("include")).arg(crate_dir.join("tests/c/writer.c"));
    if shared {
        assert!(lib.join("libloupe_timeline.so").exists(), "no libloupe_timeline.so in {}", lib.display());
        cmd.arg("-L").arg(&lib).arg("-lloupe_timeline").arg(format!("-Wl,-rpath,{}", lib.display()));
    } else {
        assert!(lib.join("libloupe_timeline.a").exists(), "no libloupe_timeline.a in {}", lib.display());
        cmd.arg(lib.join("libloupe_timeline.a")).args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"]);
    }
    let o = cmd.arg("-o").arg(&exe).output().expect("run cc");
    assert!(o.status.success(), "cc failed: {}", String::from_utf8_lossy(&o.stderr));
    exe
}

fn run_and_read(exe: &Path, dir: &Path, lib: &Path) {
    // cargo sets LD_LIBRARY_PATH, which the loader prefers to the rpath: name our library's.
    let o =
        Command::new(exe).env("LOUPE_TIMELINE_DIR", dir).env("LD_LIBRARY_PATH", lib).output().expect("run C writer");
    assert!(o.status.success(), "C writer exited {:?}: {}", o.status, String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let mut lines = out.lines();
    let path = lines.next().unwrap().strip_prefix("path ").unwrap();
    assert!(path.starts_with(dir.to_str().unwrap()), "file in LOUPE_TIMELINE_DIR: {path}");
    let lags: Vec<u64> = lines.filter_map(|l| l.strip_prefix("lag ")).map(|l| l.parse().unwrap()).collect();
    assert_eq!(lags.len(), 1000);
    let mut t = Tailer::open(path).unwrap();
    let defs: Vec<_> = t.events().iter().map(|d| (d.name.as_str(), d.level, d.rate, d.arg_names.join(","))).collect();
    assert!(defs.contains(&("c_step", 1, 9, "i,square,cube,neg".into())), "{defs:?}");
    assert!(!defs.iter().any(|d| d.0 == "bad_level" || d.0 == "too_many"));
    let mut ev = Vec::new();
    let s = t.poll(&mut ev).unwrap();
    assert_eq!((s.lost, s.corrupt), (0, 0));
    assert_eq!(ev.len(), 2000, "exactly loop + step per iteration; never the rate-0 or 0-handle events");
    for (i, pair) in ev.chunks(2).enumerate() {
        let i = i as u64;
        let name = |k: usize| t.events()[pair[k].event as usize].name.as_str();
        assert_eq!((name(0), pair[0].args), ("c_loop", [i, 0, 0, 0]));
        assert_eq!((name(1), pair[1].args), ("c_step", [i, i * i, i * i * i, (-(i as i64)) as u64]));
        assert_eq!(pair[1].lag_ticks, Some(lags[i as usize]), "step's lag is the time since loop");
        assert_eq!(pair[0].pid, t.info().pid);
    }
}

#[test]
fn c_program_via_shared_and_static_library() {
    let Some(cc) = cc() else {
        println!("SKIP: no C compiler (cc) to build tests/c/writer.c");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for shared in [true, false] {
        let exe = build(&cc, tmp.path(), shared);
        let dir = tmp.path().join(if shared { "so" } else { "a" });
        std::fs::create_dir_all(&dir).unwrap();
        run_and_read(&exe, &dir, &lib_dir("libloupe_timeline.so"));
    }
}

/// docs/timeline.md's examples are these files, verbatim: the Rust one is built with the crate
/// (`examples/loop.rs`), the C one is built and run here against the static library.
#[test]
fn the_documented_examples_are_the_built_ones() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(crate_dir.join("../docs/timeline.md")).unwrap();
    for f in ["examples/loop.rs", "examples/c/loop.c"] {
        let src = std::fs::read_to_string(crate_dir.join(f)).unwrap();
        assert!(doc.contains(&src), "docs/timeline.md does not carry {f} verbatim");
    }
    let Some(cc) = cc() else {
        println!("SKIP: no C compiler (cc) to build examples/c/loop.c");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let lib = lib_dir("libloupe_timeline.a");
    let exe = tmp.path().join("loop");
    let o = Command::new(&cc)
        .args(["-O2", "-Wall", "-Werror", "-I"])
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("examples/c/loop.c"))
        .arg(lib.join("libloupe_timeline.a"))
        .args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "cc: {}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(&exe).env("LOUPE_TIMELINE_DIR", tmp.path()).output().unwrap();
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let path = out.trim().strip_prefix("events in ").expect("the example prints its file");
    let mut t = Tailer::open(path).unwrap();
    let mut ev = Vec::new();
    let s = t.poll(&mut ev).unwrap();
    // 1,000,000 iterations of loop + loop_end (+ rx_batch in ~1/5) through an 8192-record ring.
    let published = s.read + s.lost;
    assert!((2_150_000..2_250_000).contains(&published), "{published} records");
    let ends: Vec<_> = ev.iter().filter(|e| t.events()[e.event as usize].name == "loop_end").collect();
    // After the loss at the start of the window, lags restart: the first loop_end may have none.
    assert!(ends.len() > 2000 && ends[1..].iter().all(|e| e.lag_ticks.is_some()), "loop_end lags");
}
