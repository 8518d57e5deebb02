//! CPython's own frames on a real kernel: for every Python on the machine (Debian's `python3.11`,
//! pyenv's 3.8–3.13), the sampler walks a pure-Python workload's frames in the kernel and the
//! code objects they name are the workload's functions, in call order.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use loupe_bpf::{
    PyEnd, RawStack, StackSampler, StackSamplerOptions,
    python::{code, process::Memory},
};
use loupe_testbed::{pythons, require_root};

/// The names of a sample's Python frames, innermost first (`?` for one not named).
fn names(memory: &Memory, sample: &RawStack) -> Vec<String> {
    let python = sample.python.as_ref().unwrap();
    python
        .frames
        .iter()
        .map(|f| code::read(memory, python.layout, f.code, f.identity).map_or_else(|e| format!("?{e}"), |c| c.qualname))
        .collect()
}

#[test]
fn every_python_on_the_machine_has_its_functions_named_in_call_order() {
    require_root!();
    let installed = pythons::installed();
    assert!(!installed.is_empty(), "no Python on this machine");
    let mut sampler = StackSampler::start(&StackSamplerOptions { frequency_hz: 99, ..Default::default() })
        .expect("starting the sampler");
    let mut failures = Vec::new();
    for python in &installed {
        let (mut child, pid) = pythons::start(python, &pythons::script("pyhot.py"), &["2"]);
        sampler.load_process(pid).unwrap();
        // Samples taken while the tables were loading have no Python frames yet (seconds on an
        // emulated CPU): counted from here.
        let loaded = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
        let memory = Memory::open(pid).unwrap();
        let mut samples = Vec::new();
        let until = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < until {
            sampler.drain(&mut samples, Duration::from_millis(100)).unwrap();
        }
        let mine: Vec<&RawStack> = samples.iter().filter(|s| s.pid == pid && s.time_unix_ns > loaded).collect();
        // The module, ten ceo_mid and the leaf, leaf first (the leaf's own callees — range,
        // time — are C functions, not frames of the interpreter); ceo_side beside them takes
        // about a quarter of the time.
        let whole: Vec<String> =
            ["ceo_leaf"].into_iter().chain(["ceo_mid"; 11]).chain(["<module>"]).map(String::from).collect();
        let named: Vec<Vec<String>> = mine.iter().filter(|s| s.python.is_some()).map(|s| names(&memory, s)).collect();
        let in_leaf = named.iter().filter(|n| n.first().is_some_and(|f| f == "ceo_leaf")).count();
        // ceo_leaf's chain (or a sample in ceo_mid between calls), or ceo_side under the module.
        let chain = named
            .iter()
            .filter(|n| (n.ends_with(&whole[1..]) && n.len() >= whole.len() - 1) || n[..] == ["ceo_side", "<module>"])
            .count();
        let ends: Vec<Option<PyEnd>> = mine.iter().map(|s| s.python.as_ref().map(|p| p.end)).collect();
        let root = ends.iter().filter(|e| **e == Some(PyEnd::Root)).count();
        eprintln!(
            "{}: {} samples, {} with Python frames ({root} whole), {in_leaf} innermost ceo_leaf, {chain} with the \
             whole chain; e.g. {:?}",
            python.display(),
            mine.len(),
            named.len(),
            named.iter().find(|n| n.first().is_some_and(|f| f == "ceo_leaf"))
        );
        let _ = child.kill();
        let _ = child.wait();
        if mine.len() < 50 || chain * 100 < mine.len() * 95 || in_leaf * 100 < mine.len() * 60 {
            failures.push(format!(
                "{}: {} samples, {chain} with the whole chain, {in_leaf} in ceo_leaf; ends {:?}",
                python.display(),
                mine.len(),
                ends.iter().take(10).collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Threads started and ended while sampled, each running a function made for it, whose code
/// object is freed as the thread ends (a later one may lie at the same address): every sample of
/// a thread names its own function or none (never another thread's, never a freed one's), and
/// most threads are named despite living 100 ms.
#[test]
fn threads_and_code_objects_that_come_and_go_are_never_misnamed() {
    use std::io::Write;
    require_root!();
    let script = pythons::script("pychurn.py");
    let mut reuses = 0;
    let mut sampler = StackSampler::start(&StackSamplerOptions { frequency_hz: 199, ..Default::default() })
        .expect("starting the sampler");
    for python in pythons::installed() {
        let mut child =
            Command::new(&python).arg(&script).arg("12").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let pid: u32 = line.trim().parse().unwrap();
        sampler.load_process(pid).unwrap();
        let memory = Memory::open(pid).unwrap();
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        // Named now, while the code objects live (as the agent's ingest does, within a second).
        let mut named: Vec<(u32, Vec<String>)> = Vec::new();
        let mut samples = Vec::new();
        // Code object addresses and the identities seen at each: two at one address is a freed
        // code object's memory holding another's.
        let mut identities: std::collections::HashMap<u64, std::collections::HashSet<u32>> = Default::default();
        while child.try_wait().unwrap().is_none() {
            samples.clear();
            sampler.drain(&mut samples, Duration::from_millis(50)).unwrap();
            for s in samples.iter().filter(|s| s.pid == pid && s.python.is_some()) {
                for f in &s.python.as_ref().unwrap().frames {
                    identities.entry(f.code).or_default().insert(f.identity);
                }
                named.push((s.tid, names(&memory, s)));
            }
        }
        let reused = identities.values().filter(|ids| ids.len() > 1).count();
        reuses += reused;
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        let function_of: std::collections::HashMap<u32, String> = rest
            .lines()
            .filter_map(|l| {
                let (k, tid) = l.split_once(' ')?;
                Some((tid.parse().ok()?, format!("gen_{k}")))
            })
            .collect();
        let mut wrong = Vec::new();
        let mut threads_named = std::collections::HashSet::new();
        for (tid, frames) in &named {
            let Some(own) = function_of.get(tid) else { continue };
            for f in frames.iter().filter(|f| f.starts_with("gen_")) {
                if f != own {
                    wrong.push(format!("thread {tid} ({own}) sampled in {f}"));
                } else {
                    threads_named.insert(*tid);
                }
            }
        }
        eprintln!(
            "{}: {} Python samples of {} threads, {} threads named in their own function, {} misnamed; {reused} code \
             object addresses held two functions",
            python.display(),
            named.len(),
            function_of.len(),
            threads_named.len(),
            wrong.len()
        );
        assert!(wrong.is_empty(), "{}: {wrong:?}", python.display());
        assert!(
            threads_named.len() * 2 >= function_of.len(),
            "{}: {} of {} threads named",
            python.display(),
            threads_named.len(),
            function_of.len()
        );
    }
    // The test means something only if freed code objects' memory was reused under the walk.
    assert!(reuses > 0, "no code object address held two functions: nothing was reused");
}
