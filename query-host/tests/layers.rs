//! The query host's layers are crates (`loupe` → `loupe-doors` → `loupe-fleet` → `loupe-core` →
//! `loupe-sandbox` → `loupe-api`), so the compiler holds them. Two layerings sit inside a crate,
//! and this test holds those: in the `loupe` binary, `main → cli/app → render` (`app` may use
//! `cli`; nothing imports `main`), and in `loupe-core`, `ingest` (kernel → store) names nothing of
//! the core above it (`Host`, its operations). It reads every source file and fails, naming the
//! file and the import, when a module reaches up or sideways between peers. Test modules
//! (`#[cfg(test)] mod tests`) are not counted.
//!
//! Inside a layer, sibling modules (the files and folders of one directory) may use each other,
//! but never in a circle (`no_sibling_cycles`, over every crate of the workspace; a folder
//! module uses what any file inside it names, an item its parent re-exports counts as its
//! defining module's): a circle is one idea split over files, or two
//! tangled. A path in a doc link counts as a use: name a module that is not used in plain code
//! style instead. The generated bindings, the cursor structs and the invocation log of
//! `loupe-sandbox` sit below the modules that use them for that reason.

use std::{collections::BTreeSet, fs, path::Path};

/// One crate's layering of its top-level modules.
struct Layering {
    /// The crate's folder, from this one.
    dir: &'static str,
    /// Each top-level module's layer: lower numbers may import higher ones.
    layers: &'static [(&'static str, u32)],
    /// Peers that may import each other in this direction only.
    peers: &'static [(&'static str, &'static str)],
    /// The layer of every other name at the crate's root; `None`: each module must be listed.
    others: Option<u32>,
}

const BINARY: Layering = Layering {
    dir: "",
    layers: &[("main", 0), ("cli", 1), ("app", 1), ("render", 2)],
    peers: &[("app", "cli")],
    others: None,
};

/// The core's root (`Host`, its operations, the modules beside them) sits above `ingest`.
const CORE: Layering = Layering { dir: "core", layers: &[("ingest", 1)], peers: &[], others: Some(0) };

fn layer(of: &Layering, module: &str) -> u32 {
    of.layers.iter().find(|(m, _)| *m == module).map(|(_, l)| *l).or(of.others).unwrap_or_else(|| {
        panic!(
            "module '{module}' has no layer: add it to {}'s layers in tests/layers.rs (and to lib.rs's docs)",
            of.dir
        )
    })
}

/// Top-level modules a source text names through `crate::`.
fn imports(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(i) = text[at..].find("crate::") {
        let start = at + i + "crate::".len();
        at = start;
        if start >= 7 && bytes[start - 8..start - 7].iter().any(|b| b.is_ascii_alphanumeric() || *b == b'_') {
            continue; // `loupe_crate::…`, not `crate::`
        }
        if bytes.get(start) == Some(&b'{') {
            // `crate::{a::…, b, c::{…}}`: the names at the group's first level.
            let mut depth = 0;
            let mut expect_name = true;
            let mut name = String::new();
            for &b in &bytes[start..] {
                match b {
                    b'{' => {
                        depth += 1;
                        if depth == 1 {
                            expect_name = true;
                        }
                    }
                    b'}' => {
                        if depth == 1 && !name.is_empty() {
                            out.insert(std::mem::take(&mut name));
                        }
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' if depth == 1 => {
                        if !name.is_empty() {
                            out.insert(std::mem::take(&mut name));
                        }
                        expect_name = true;
                    }
                    b if depth == 1 && expect_name && (b.is_ascii_alphanumeric() || b == b'_') => name.push(b as char),
                    b if depth == 1 && !b.is_ascii_whitespace() => {
                        if !name.is_empty() {
                            out.insert(std::mem::take(&mut name));
                        }
                        expect_name = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = text[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Imports of `module`'s source `text` that break the layering `of`.
fn violations(of: &Layering, module: &str, text: &str) -> (usize, Vec<String>) {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    let from = layer(of, module);
    let found = imports(text);
    let bad = found
        .iter()
        .filter(|to| *to != module && !(layer(of, to) > from || of.peers.contains(&(module, to.as_str()))))
        .map(|to| format!("{module} (layer {from}) imports crate::{to} (layer {})", layer(of, to)))
        .collect();
    (found.len(), bad)
}

#[test]
fn imports_point_down_only() {
    let mut all = Vec::new();
    let mut checked = 0;
    for of in [BINARY, CORE] {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(of.dir).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        for file in &files {
            let rel = file.strip_prefix(&src).unwrap();
            let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
            let module = first.trim_end_matches(".rs");
            if module == "lib" {
                continue;
            }
            let (n, bad) = violations(&of, module, &fs::read_to_string(file).unwrap());
            checked += n;
            all.extend(bad.into_iter().map(|b| format!("{}: {b}", file.display())));
        }
    }
    assert!(checked > 12, "only {checked} imports found: is the scan broken?");
    assert!(all.is_empty(), "imports against the layering:\n  {}", all.join("\n  "));
}

/// The siblings (files and folders of the same directory) that a module's source `text` names,
/// through `super::` or through its parent's full path (`crate::a::b::` for a module of `a/b/`),
/// an item the parent re-exports (`reexports`: item → the sibling that defines it) counting as
/// its sibling.
fn sibling_imports(
    parent: &[String],
    siblings: &BTreeSet<String>,
    reexports: &std::collections::BTreeMap<String, String>,
    text: &str,
) -> BTreeSet<String> {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    let text = if parent.is_empty() {
        text.to_string() // the crate's root: `crate::x` is a sibling
    } else {
        let text = text.replace(&format!("crate::{}::", parent.join("::")), "super::");
        text.replace("crate::", "krate_::").replace("super::super::", "zuper::").replace("super::", "crate::")
    };
    named_siblings(&text, siblings, reexports)
}

/// The siblings a file deeper inside one of them names by full path (`crate::a::b::x` for a
/// sibling `x` of `a/b/`; at the crate's root, `crate::x`), re-exports followed: a folder
/// module uses what any file inside it uses.
fn full_path_imports(
    parent: &[String],
    siblings: &BTreeSet<String>,
    reexports: &std::collections::BTreeMap<String, String>,
    text: &str,
) -> BTreeSet<String> {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    let text = if parent.is_empty() {
        text.to_string()
    } else {
        text.replace("crate::", "krate_::").replace(&format!("krate_::{}::", parent.join("::")), "crate::")
    };
    named_siblings(&text, siblings, reexports)
}

/// The siblings `text` names after `crate::`, an item re-exported by the parent standing for its
/// defining sibling.
fn named_siblings(
    text: &str,
    siblings: &BTreeSet<String>,
    reexports: &std::collections::BTreeMap<String, String>,
) -> BTreeSet<String> {
    imports(text)
        .into_iter()
        .filter_map(|n| if siblings.contains(&n) { Some(n) } else { reexports.get(&n).cloned() })
        .collect()
}

/// What a parent module's `text` re-exports from its children: item (or alias) → child, from
/// `pub use child::Item;`, `pub use child::{A, b::C as D};` and `pub(crate) use …`.
fn reexports(text: &str, siblings: &BTreeSet<String>) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    for (i, _) in text.match_indices("use ") {
        let before = text[..i].trim_end();
        if !(before.ends_with("pub") || before.ends_with("pub(crate)")) {
            continue;
        }
        let stmt = text[i + 4..].split(';').next().unwrap_or_default().replace("self::", "");
        let Some((child, rest)) = stmt.trim().split_once("::") else { continue };
        if !siblings.contains(child) {
            continue;
        }
        let rest = rest.trim().trim_start_matches('{').trim_end_matches('}');
        // The last name of each top-level entry (nested groups are rare here: take their names too).
        for entry in rest.split([',', '{', '}']) {
            let entry = entry.trim();
            let name = match entry.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => entry.rsplit("::").next().unwrap_or_default().trim(),
            };
            if !name.is_empty() && name != "self" && name != "*" {
                out.insert(name.to_string(), child.to_string());
            }
        }
    }
    out
}

/// A circle in `edges` (module → the siblings it names), as the path around it, if any.
fn cycle(edges: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        edges: &std::collections::BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == at) {
            let mut circle = path[i..].to_vec();
            circle.push(at.to_string());
            return Some(circle);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_string());
        for next in edges.get(at).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(at.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|start| visit(start, edges, &mut Vec::new(), &mut done))
}

/// The circles among sibling modules of the crate whose sources are under `src`, and how many
/// sibling imports were seen. `skip_root`: leave out the top-level modules (this crate's are held
/// by `imports_point_down_only`).
fn crate_cycles(src: &Path, skip_root: bool) -> (Vec<String>, usize) {
    let mut dirs = vec![src.to_path_buf()];
    let (mut circles, mut edges_seen) = (Vec::new(), 0);
    while let Some(dir) = dirs.pop() {
        let mut siblings = BTreeSet::new();
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            // `src/bin/*.rs` are crate roots of their own, not modules.
            if path.is_dir() && !(dir == src && name == "bin") {
                dirs.push(path.clone());
                siblings.insert(name);
            } else if path.extension().is_some_and(|e| e == "rs")
                && !["mod", "lib", "main", "build"].contains(&name.as_str())
            {
                siblings.insert(name);
            }
        }
        if dir == src && skip_root {
            continue;
        }
        let parent: Vec<String> =
            dir.strip_prefix(src).unwrap().components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        let parent_file = if dir == src {
            [src.join("lib.rs"), src.join("main.rs")].into_iter().find(|p| p.exists())
        } else {
            [dir.join("mod.rs"), dir.with_extension("rs")].into_iter().find(|p| p.exists())
        };
        let parent_text = parent_file.map(|p| fs::read_to_string(p).unwrap()).unwrap_or_default();
        let reexported = reexports(&parent_text, &siblings);
        let mut edges = std::collections::BTreeMap::new();
        for name in &siblings {
            // A folder module's text is its mod.rs (or `name.rs` beside it), and what the files
            // inside it name by full path; its own children are checked in their turn.
            let file = if dir.join(name).join("mod.rs").exists() {
                dir.join(name).join("mod.rs")
            } else {
                dir.join(format!("{name}.rs"))
            };
            let text = fs::read_to_string(&file).unwrap_or_default();
            let mut named = sibling_imports(&parent, &siblings, &reexported, &text);
            if dir.join(name).is_dir() {
                let mut inside = Vec::new();
                sources(&dir.join(name), &mut inside);
                for deeper in inside.iter().filter(|f| **f != file) {
                    let text = fs::read_to_string(deeper).unwrap();
                    named.extend(full_path_imports(&parent, &siblings, &reexported, &text));
                }
            }
            named.remove(name);
            edges_seen += named.len();
            edges.insert(name.clone(), named);
        }
        if let Some(c) = cycle(&edges) {
            let at = dir.strip_prefix(src.parent().unwrap().parent().unwrap()).unwrap_or(&dir);
            circles.push(format!("{}: {}", at.display(), c.join(" → ")));
        }
    }
    (circles, edges_seen)
}

/// No two sibling modules use each other in a circle, in any crate of the workspace (the
/// kernel-side ones, the analysis SDK and the fuzz targets included), but the ones still on
/// `KNOWN_CIRCLES`.
#[test]
fn no_sibling_cycles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut crates = Vec::new();
    for top in ["", "bpf", "query-host", "testbed", "udf-sdk", "udf-sdk/analyses", "udf-sdk/test-modules"] {
        for entry in fs::read_dir(root.join(top)).unwrap() {
            let dir = entry.unwrap().path();
            if dir.join("Cargo.toml").exists() && dir.join("src").is_dir() {
                crates.push(dir);
            }
        }
    }
    assert!(crates.len() > 15, "only {} crates found: {crates:?}", crates.len());
    let (mut circles, mut edges_seen) = (Vec::new(), 0);
    for dir in &crates {
        let skip_root = dir.ends_with("query-host");
        let (c, e) = crate_cycles(&dir.join("src"), skip_root);
        circles.extend(c);
        edges_seen += e;
    }
    assert!(edges_seen > 100, "only {edges_seen} sibling imports found: is the scan broken?");
    circles.sort();
    assert_eq!(
        circles, KNOWN_CIRCLES,
        "sibling modules that use each other in a circle (a circle fixed: take it off KNOWN_CIRCLES)"
    );
}

/// Circles not undone yet, each the first one the scan meets in its directory: none. (The last
/// one, the store's `retention → samples → retention`, went when its put methods moved into
/// `store/src/put.rs`, above both the writers and retention.)
const KNOWN_CIRCLES: &[&str] = &[];

#[test]
fn the_sibling_scan_follows_super_and_full_paths_and_finds_circles() {
    let siblings: BTreeSet<String> = ["host", "probes", "sandbox", "log"].map(String::from).into();
    let parent = ["analysis".to_string()];
    let text = "use super::{host::DataHost, log::InvocationLog, UdfError};\nuse crate::analysis::probes::X;\nuse crate::model::host;\nuse super::super::core::x;\n#[cfg(test)]\nmod tests { use super::sandbox; }";
    let reexported =
        reexports("pub use log::Limits;\npub use sandbox::x::Other as Renamed;\nuse host::Private;", &siblings);
    assert_eq!(reexported.get("Renamed").map(String::as_str), Some("sandbox"));
    assert!(!reexported.contains_key("Private"), "{reexported:?}");
    let text = format!("use super::Limits;\n{text}");
    let got: Vec<String> = sibling_imports(&parent, &siblings, &reexported, &text).into_iter().collect();
    assert_eq!(got, ["host", "log", "probes"], "crate::model::host is not a sibling; tests are not counted");
    let got = sibling_imports(&[], &siblings, &reexported, "use crate::{Renamed, host::X};");
    assert_eq!(got, ["host", "sandbox"].map(String::from).into(), "at the root, crate:: names siblings");
    let deeper = "use super::Near;\nuse crate::analysis::Renamed;\nuse crate::core::Host;";
    let got = full_path_imports(&parent, &siblings, &reexported, deeper);
    assert_eq!(got, ["sandbox"].map(String::from).into(), "a deeper file's super:: is its own parent");
    let edges = [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
        .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect::<BTreeSet<_>>()))
        .into();
    assert_eq!(cycle(&edges), Some(["a", "b", "c", "a"].map(String::from).to_vec()));
    let edges = [("a", vec!["b"]), ("b", vec![]), ("c", vec!["a", "b"])]
        .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect::<BTreeSet<_>>()))
        .into();
    assert_eq!(cycle(&edges), None);
}

#[test]
fn the_scan_sees_grouped_and_plain_imports_and_flags_upward_ones() {
    let text = "use crate::{\n    analysis::UdfError,\n    clock::{format_unix_ns, now},\n    model,\n};\nlet x = crate::core::time::range;\nuse loupe_crate::x;";
    let got: Vec<String> = imports(text).into_iter().collect();
    assert_eq!(got, ["analysis", "clock", "core", "model"]);
    let (_, bad) = violations(&BINARY, "render", "use crate::{cli::Cli, app::commands};");
    assert_eq!(bad, ["render (layer 2) imports crate::app (layer 1)", "render (layer 2) imports crate::cli (layer 1)"]);
    let (_, bad) = violations(&BINARY, "cli", "use crate::app::x;");
    assert_eq!(bad.len(), 1, "peers may import each other one way only");
    let (_, bad) = violations(&CORE, "ingest", "use crate::{Host, ingest::stacks};\nuse crate::runs::RunScheduler;");
    assert_eq!(
        bad,
        ["ingest (layer 1) imports crate::Host (layer 0)", "ingest (layer 1) imports crate::runs (layer 0)"]
    );
    let (_, bad) =
        violations(&CORE, "runs", "use crate::ingest::runs::x;\n#[cfg(test)]\nmod tests { use crate::Host; }");
    assert!(bad.is_empty(), "{bad:?}");
}
