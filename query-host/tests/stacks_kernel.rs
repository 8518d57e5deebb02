//! The stack sampler on a real kernel, through the `loupe` command line: a C program with frame
//! pointers and a known hot function is busy while `loupe sample` runs; `loupe profile` must
//! attribute the right number of samples to it, in the right place of the stack, after it exited.

mod sampling;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use loupe_testbed::{
    require_root,
    sampling::{Stolen, count_tolerance},
};
use sampling::*;
use serde_json::Value;

const HZ: f64 = 10.0;

fn build_busy(dir: &Path) -> PathBuf {
    build_busy_with(dir, "busy", &[])
}

fn build_busy_with(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    build_fixture(dir, "busy", name, extra)
}

/// Sum of the values of nodes named `name` whose parent is named `parent`.
fn under(node: &Value, parent: &str, name: &str) -> u64 {
    let children = node["children"].as_array().cloned().unwrap_or_default();
    let here: u64 = if node["name"] == parent {
        children.iter().filter(|c| c["name"] == name).map(|c| c["value"].as_u64().unwrap()).sum()
    } else {
        0
    };
    here + children.iter().map(|c| under(c, parent, name)).sum::<u64>()
}

/// Every function name in the tree.
fn names(node: &Value, out: &mut Vec<String>) {
    out.push(node["name"].as_str().unwrap().to_string());
    for c in node["children"].as_array().into_iter().flatten() {
        names(c, out);
    }
}

/// `busy` prints "PID CPU_SECONDS" when it is done.
fn pid_and_cpu(out: &Output) -> (String, f64) {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace();
    let pid = it.next().expect("busy printed its PID").to_string();
    let cpu = it.next().expect("busy printed its CPU time").parse().unwrap();
    (pid, cpu)
}

fn function<'a>(view: &'a Value, name: &str) -> Option<&'a Value> {
    view["functions"].as_array().unwrap().iter().find(|f| f["name"] == name)
}

#[test]
fn hot_function_gets_its_share_and_survives_process_exit() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let busy = build_busy(dir.path());
    let data = dir.path().join("data");
    let seconds = 5.0;
    let sampler = start_sampling(&data, seconds + 2.0, &[]);
    let stolen = Stolen::now();
    let two_threads = Command::new(&busy).args(["spin", &seconds.to_string(), "2"]).output().unwrap();
    let ((pid, cpu_seconds), stolen) = (pid_and_cpu(&two_threads), stolen.total());
    finish(sampler);
    // The process is gone; its samples must still be fully named.
    let view = profile(&data, &["--pid", &pid]);
    let hot = function(&view, "loupe_hot_spin").expect("loupe_hot_spin in the profile");
    // Two threads busy for `seconds` each: 10 × N per thread when each has a CPU to itself, and
    // in any case 10 per second of CPU time the kernel says the process used, give or take a
    // tick per 1/HZ the hypervisor stole (testbed::sampling).
    let expected = HZ * cpu_seconds;
    let got = hot["total"].as_u64().unwrap() as f64;
    let band = count_tolerance(expected, cpu_seconds / (2.0 * seconds)) + HZ * stolen;
    assert!(
        (got - expected).abs() <= band,
        "loupe_hot_spin: {got} samples, expected {expected} ± {band:.0} ({stolen:.2} s stolen)"
    );
    eprintln!("loupe_hot_spin: {got} samples for {cpu_seconds} CPU s (ideal {})", HZ * seconds * 2.0);
    let samples = view["samples"].as_u64().unwrap();
    let placed = under(&view["flamegraph"], "loupe_cold_caller", "loupe_hot_spin");
    assert!(
        placed as f64 >= 0.9 * samples as f64,
        "{placed} of {samples} samples have loupe_cold_caller -> loupe_hot_spin"
    );
    let mut all = Vec::new();
    names(&view["flamegraph"], &mut all);
    assert!(all.iter().any(|n| n == "worker"), "static function names resolved too: {all:?}");
    // A frame first sampled in the process's last moments (the drain runs every 0.5 s) finds
    // it gone and stays `[unknown]+address` (docs/stacks.md); everything else is named.
    let unknown = unknown_samples(&view["flamegraph"]);
    assert!(unknown * 50 <= samples, "{unknown} of {samples} samples have unnamed frames: {all:?}");
}

/// Samples that pass through a node named `[unknown]…` (counted at the outermost such node).
fn unknown_samples(node: &Value) -> u64 {
    node["children"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            if c["name"].as_str().is_some_and(|n| n.starts_with("[unknown]")) {
                c["value"].as_u64().unwrap()
            } else {
                unknown_samples(c)
            }
        })
        .sum()
}

#[test]
fn syscalls_show_kernel_frames_under_user_frames() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let busy = build_busy(dir.path());
    let data = dir.path().join("data");
    let sampler = start_sampling(&data, 4.0, &[]);
    let out = Command::new(&busy).args(["syscall", "2.5", "1"]).output().unwrap();
    let (pid, _) = pid_and_cpu(&out);
    finish(sampler);
    let view = profile(&data, &["--pid", &pid]);
    let mut below = Vec::new();
    fn find<'a>(node: &'a Value, name: &str) -> Option<&'a Value> {
        if node["name"] == name {
            return Some(node);
        }
        node["children"].as_array().into_iter().flatten().find_map(|c| find(c, name))
    }
    let user = find(&view["flamegraph"], "loupe_syscall_loop").expect("loupe_syscall_loop in the flame graph");
    names(user, &mut below);
    let kernel = ["vfs_read", "ksys_read", "__x64_sys_read", "do_syscall_64", "read_zero", "iov_iter_zero"];
    assert!(
        below.iter().any(|n| kernel.contains(&n.as_str())),
        "no kernel read path under loupe_syscall_loop: {below:?}"
    );
    let in_kernel: u64 = view["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| kernel.contains(&f["name"].as_str().unwrap()))
        .map(|f| f["total"].as_u64().unwrap())
        .max()
        .unwrap_or(0);
    assert!(in_kernel * 2 >= view["samples"].as_u64().unwrap(), "most samples should be in the kernel: {in_kernel}");
}

#[test]
fn deny_listed_comm_is_never_sampled() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    let busy = build_busy(dir.path());
    // The denied twin's file is named like its comm, so it is `secret-busy` from its exec on:
    // renamed only by the program itself, a sample during its dynamic loading was taken under
    // the file's name (a fresh clone's run caught one).
    let secret = build_busy_with(dir.path(), "secret-busy", &[]);
    let data = dir.path().join("data");
    let sampler = start_sampling(&data, 5.5, &["--deny-comm", "secret-busy"]);
    let stolen = Stolen::now();
    let denied = Command::new(&secret).args(["spin", "4", "1", "secret-busy"]).stdout(Stdio::piped()).spawn().unwrap();
    let sibling = Command::new(&busy).args(["spin", "4", "1", "public-busy"]).stdout(Stdio::piped()).spawn().unwrap();
    let (denied_pid, sibling_pid) = (denied.id().to_string(), sibling.id().to_string());
    denied.wait_with_output().unwrap();
    let (_, sibling_cpu) = pid_and_cpu(&sibling.wait_with_output().unwrap());
    let stolen = stolen.total();
    finish(sampler);
    let secret = profile(&data, &["--comm", "secret-busy"]);
    assert_eq!(secret["samples"], 0, "a deny-listed comm was sampled");
    // Its PID: nothing, or at most one sample between the fork and the exec (still this test's
    // comm: ~0.1 ms, 1 in ~1,000 runs at 10 Hz).
    let out = loupe(&["profile", "--json", "--pid", &denied_pid], &data).output().unwrap();
    if out.status.success() {
        let view: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(view["samples"].as_u64().unwrap() <= 1, "the denied PID was sampled: {}", view["functions"]);
    } else {
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("no samples of PID {denied_pid}")));
    }
    let public = profile(&data, &["--pid", &sibling_pid]);
    let got = public["samples"].as_u64().unwrap() as f64;
    // Sampled normally: about 10 per CPU second (wider margin than the hot-function test: a
    // sibling sharing the CPUs with the denied twin is sampled less regularly).
    let expected = HZ * sibling_cpu;
    let band = count_tolerance(expected, sibling_cpu / 4.0).max(0.3 * expected) + HZ * stolen;
    assert!(
        (got - expected).abs() <= band,
        "sibling sampled {got} times, expected {expected} ± {band:.0} ({stolen:.2} s stolen)"
    );
}

/// Samples of `pid` in the store (0 when `loupe profile` finds none).
fn samples_of_pid(data: &Path, pid: u32) -> u64 {
    let out = loupe(&["profile", "--json", "--pid", &pid.to_string()], data).output().unwrap();
    if !out.status.success() {
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("no samples of PID {pid}")));
        return 0;
    }
    let view: Value = serde_json::from_slice(&out.stdout).unwrap();
    view["samples"].as_u64().unwrap()
}

#[test]
fn loupe_leaves_itself_out_unless_asked() {
    require_root!();
    // At 999 Hz `loupe sample` is itself on a CPU much of the time (draining, naming and storing
    // ~2,000 samples a second): with --sample-self it is in its own samples, without it never.
    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for (name, extra) in [("default", &["--frequency", "999"][..]), ("self", &["--frequency", "999", "--sample-self"])]
    {
        let data = dir.path().join(name);
        let sampler = start_sampling(&data, 3.0, extra);
        let pid = sampler.id();
        finish(sampler);
        seen.push(samples_of_pid(&data, pid));
    }
    assert_eq!(seen[0], 0, "loupe sample was in its own samples without --sample-self");
    assert!(seen[1] > 0, "with --sample-self loupe sample should be in its own samples");
}

/// Flame-graph nodes named `name`: their kinds.
fn kinds_of(node: &Value, name: &str, out: &mut Vec<String>) {
    if node["name"] == name {
        out.push(node["kind"].as_str().unwrap_or_default().to_string());
    }
    for c in node["children"].as_array().into_iter().flatten() {
        kinds_of(c, name, out);
    }
}

#[test]
fn jit_code_is_named_from_perf_maps_in_perfs_form_and_the_jdks() {
    require_root!();
    if !cfg!(target_arch = "x86_64") {
        eprintln!("SKIP jit_code_is_named_from_perf_maps…: the fixture's machine code is x86-64");
        return;
    }
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let jit = build_fixture(dir.path(), "jit", "jit", &[]);
    for form in ["perf", "jdk"] {
        let data = dir.path().join(form);
        let name = format!("long Hot.spin_{form}(long)");
        let mut spinner = Command::new(&jit).args([form, &name]).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(spinner.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        let pid = line.trim().to_string();
        let sampler = start_sampling(&data, 2.5, &[]);
        finish(sampler);
        let _ = spinner.kill();
        let _ = spinner.wait();
        let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
        let view = profile(&data, &["--pid", &pid]);
        let samples = view["samples"].as_u64().unwrap();
        let hot = function(&view, &name).map_or(0, |f| f["self"].as_u64().unwrap());
        assert!(samples >= 10, "{form}: only {samples} samples of a spinning process");
        assert!(hot * 10 >= samples * 9, "{form}: {hot} of {samples} samples name {name}: {}", view["functions"]);
        let mut kinds = Vec::new();
        kinds_of(&view["flamegraph"], &name, &mut kinds);
        assert!(!kinds.is_empty() && kinds.iter().all(|k| k == "jit"), "{form}: kinds {kinds:?}");
    }
}

#[test]
fn pprof_export_opens_in_go_tool_pprof() {
    require_root!();
    let go = Command::new("go").arg("version").output();
    if go.is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI must have Go (scripts/setup installs golang-go)");
        eprintln!("SKIP pprof_export_opens_in_go_tool_pprof: needs `go` (apt install golang-go)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let busy = build_busy(dir.path());
    let data = dir.path().join("data");
    let sampler = start_sampling(&data, 3.5, &[]);
    let out = Command::new(&busy).args(["spin", "2", "1"]).output().unwrap();
    let (pid, _) = pid_and_cpu(&out);
    finish(sampler);
    let file = dir.path().join("busy.pb.gz");
    let view = profile(&data, &["--pid", &pid, "--pprof", file.to_str().unwrap()]);
    let top = view["functions"][0]["name"].as_str().unwrap().to_string();
    assert_eq!(top, "loupe_hot_spin");
    let out = Command::new("go")
        .args(["tool", "pprof", "-top", "-sample_index=samples"])
        .arg(&file)
        .env("HOME", dir.path())
        .env("PPROF_TMPDIR", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "go tool pprof: {}", String::from_utf8_lossy(&out.stderr));
    // The first row after the header names the top function by flat (self) samples.
    let first = text.lines().skip_while(|l| !l.trim_start().starts_with("flat")).nth(1).unwrap_or("");
    assert!(first.trim_end().ends_with(&top), "go tool pprof -top disagrees:\n{text}");
}

#[test]
fn frames_without_symbols_are_kept_as_module_and_offset() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    // Stripped: no symbol table, so loupe_hot_spin has no name to find.
    let stripped = build_busy_with(dir.path(), "busy-stripped", &["-s"]);
    let data = dir.path().join("data");
    let sampler = start_sampling(&data, 3.5, &[]);
    let out = Command::new(&stripped).args(["spin", "2", "1"]).output().unwrap();
    let (pid, _) = pid_and_cpu(&out);
    finish(sampler);
    let view = profile(&data, &["--pid", &pid]);
    let top = view["functions"][0]["name"].as_str().unwrap();
    let offset = top.strip_prefix("busy-stripped+0x").unwrap_or_else(|| panic!("top frame named {top:?}"));
    assert!(u64::from_str_radix(offset, 16).is_ok_and(|o| o > 0), "{top}");
    // Unnamed, each sampled address of the spin loop is its own frame (the loop's few
    // instructions share the samples): together they hold the program's time.
    let in_module: u64 = view["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"].as_str().unwrap().starts_with("busy-stripped+0x"))
        .map(|f| f["self"].as_u64().unwrap())
        .sum();
    assert!(in_module as f64 >= 0.8 * view["samples"].as_u64().unwrap() as f64, "{}", view["functions"]);
}

#[test]
fn cpp_names_are_demangled() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    // The same program compiled as C++: its functions carry mangled names in the binary.
    let cpp = build_busy_with(dir.path(), "busy-cpp", &["-x", "c++", "-fno-exceptions"]);
    let data = dir.path().join("data");
    let sampler = start_sampling(&data, 3.5, &[]);
    let out = Command::new(&cpp).args(["spin", "2", "1"]).output().unwrap();
    let (pid, _) = pid_and_cpu(&out);
    finish(sampler);
    let view = profile(&data, &["--pid", &pid]);
    assert_eq!(view["functions"][0]["name"], "loupe_hot_spin(double)", "{}", view["functions"]);
    let placed = under(&view["flamegraph"], "loupe_cold_caller(double)", "loupe_hot_spin(double)");
    assert!(placed as f64 >= 0.9 * view["samples"].as_u64().unwrap() as f64);
}

/// Samples whose leaf (innermost) frame is the function `name`.
fn self_samples(view: &Value, name: &str) -> u64 {
    function(view, name).and_then(|f| f["self"].as_u64()).unwrap_or(0)
}

#[test]
fn inlined_functions_get_frames_of_their_own_from_dwarf() {
    require_root!();
    let dir = tempfile::tempdir().unwrap();
    // The same program twice: with its own DWARF (-g), and without (no record of the inlining).
    let with_dwarf = build_busy_with(dir.path(), "busy-g", &["-g"]);
    let without = build_busy_with(dir.path(), "busy-nodwarf", &[]);
    let data = dir.path().join("data");
    let sampler = start_sampling(&data, 6.0, &["--inlined-frames"]);
    let (g_pid, g_cpu) = pid_and_cpu(&Command::new(&with_dwarf).args(["inline", "2", "1"]).output().unwrap());
    let (plain_pid, _) = pid_and_cpu(&Command::new(&without).args(["inline", "2", "1"]).output().unwrap());
    finish(sampler);

    let inlined = "loupe_inlined_spin [inlined]";
    let view = profile(&data, &["--pid", &g_pid]);
    let samples = view["samples"].as_u64().unwrap();
    // As many as the CPU time it got, whatever else the machine runs: the spin lasts 2 s of
    // wall time, and a loaded machine gives it less than a core (one fresh check beside a build
    // gave it 0.9 s: 9 samples).
    assert!(
        samples >= 5 && samples as f64 >= 0.6 * HZ * g_cpu,
        "only {samples} samples of the -g build for {g_cpu} CPU s at {HZ} Hz"
    );
    // The spin's loop is the inlined function's code: nearly every sample is in it, as its own
    // frame directly under the function it was inlined into.
    let placed = under(&view["flamegraph"], "loupe_inlining_caller", inlined);
    assert!(
        placed as f64 >= 0.8 * samples as f64,
        "{placed} of {samples} samples have loupe_inlining_caller -> {inlined}: {}",
        view["functions"]
    );
    assert!(self_samples(&view, inlined) as f64 >= 0.6 * samples as f64, "{}", view["functions"]);

    // Without DWARF nothing changes: the caller is the leaf, and nothing says inlined.
    let view = profile(&data, &["--pid", &plain_pid]);
    let samples = view["samples"].as_u64().unwrap();
    let mut all = Vec::new();
    names(&view["flamegraph"], &mut all);
    assert!(!all.iter().any(|n| n.ends_with("[inlined]")), "no DWARF, yet: {all:?}");
    let leaf = self_samples(&view, "loupe_inlining_caller");
    assert!(leaf as f64 >= 0.6 * samples as f64, "{leaf} of {samples} samples end in loupe_inlining_caller: {all:?}");

    // DWARF in a separate debug file (found by build ID under a --debug-dir), the binary keeping
    // its symbols only: the same inlined frame, from the debug file.
    let split = build_busy_with(dir.path(), "busy-split", &["-g", "-Wl,--build-id"]);
    let id = build_id(&split);
    let by_id = dir.path().join("debug").join(".build-id").join(&id[..2]);
    std::fs::create_dir_all(&by_id).unwrap();
    let debug = by_id.join(format!("{}.debug", &id[2..]));
    let mut keep = Command::new("objcopy");
    keep.arg("--only-keep-debug").arg(&split).arg(&debug);
    let mut strip = Command::new("strip");
    strip.arg("--strip-debug").arg(&split);
    for cmd in [&mut keep, &mut strip] {
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let debug_dir = dir.path().join("debug");
    let data = dir.path().join("data-split");
    let sampler = start_sampling(&data, 6.0, &["--inlined-frames", "--debug-dir", debug_dir.to_str().unwrap()]);
    let (pid, _) = pid_and_cpu(&Command::new(&split).args(["inline", "2", "1"]).output().unwrap());
    finish(sampler);
    let view = profile(&data, &["--pid", &pid]);
    let samples = view["samples"].as_u64().unwrap();
    let placed = under(&view["flamegraph"], "loupe_inlining_caller", inlined);
    assert!(
        samples >= 5 && placed as f64 >= 0.8 * samples as f64,
        "{placed} of {samples} samples of the split build have loupe_inlining_caller -> {inlined}: {}",
        view["functions"]
    );

    // Without `--inlined-frames` (the default): the -g build named from its symbols alone.
    let data = dir.path().join("data-no-inlined");
    let sampler = start_sampling(&data, 4.0, &[]);
    let (pid, _) = pid_and_cpu(&Command::new(&with_dwarf).args(["inline", "2", "1"]).output().unwrap());
    finish(sampler);
    let view = profile(&data, &["--pid", &pid]);
    let mut all = Vec::new();
    names(&view["flamegraph"], &mut all);
    assert!(!all.iter().any(|n| n.ends_with("[inlined]")), "no --inlined-frames, yet: {all:?}");
    assert!(all.iter().any(|n| n == "loupe_inlining_caller"), "{all:?}");
}
