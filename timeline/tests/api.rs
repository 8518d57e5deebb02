//! The writer API in-process: definitions and their errors, the 0 handle, the threshold before
//! the first breath, rings given back by exiting threads, drops counted when rings run out,
//! and a forked child writing its own file. One test: the environment is read once.

use std::sync::{Arc, Barrier};

use loupe_timeline::reader::{Tailer, discover};
use loupe_timeline::{self as tl, DefineError, Event};

#[test]
fn writer_api_in_process() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: set before any thread of this test binary reads the environment (one test).
    unsafe {
        std::env::set_var("LOUPE_TIMELINE_DIR", dir.path());
        std::env::set_var("LOUPE_TIMELINE_RINGS", "4");
    }
    assert!(matches!(tl::define("", 0, 9, &[]), Err(DefineError::BadName(_))));
    assert!(matches!(tl::define(&"x".repeat(49), 0, 9, &[]), Err(DefineError::BadName(_))));
    assert!(matches!(tl::define("a", 10, 9, &[]), Err(DefineError::BadLevel(10))));
    assert!(matches!(tl::define("a", 0, 10, &[]), Err(DefineError::BadRate(10))));
    assert!(matches!(tl::define("a", 0, 9, &["1", "2", "3", "4", "5"]), Err(DefineError::BadArgs(_))));
    assert!(matches!(tl::define("a", 0, 9, &["x,y"]), Err(DefineError::BadArgs(_))));
    assert!(tl::file_path().is_none(), "no file before the first successful define");

    let a = tl::define("a", 0, 9, &["n"]).unwrap();
    assert_eq!(tl::define("a", 0, 9, &["n"]).unwrap(), a, "identical redefinition: same handle");
    assert!(matches!(tl::define("a", 1, 9, &["n"]), Err(DefineError::Redefined(_))));
    let low = tl::define("low", 1, 8, &[]).unwrap();
    let path = tl::file_path().unwrap();
    assert!(path.starts_with(dir.path()) && path.to_str().unwrap().ends_with(".tl"));
    let found = discover(dir.path()).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].pid, found[0].path.clone()), (std::process::id(), path.clone()));

    // Before this thread's first breath only rate 9 is logged; Event::NONE never is.
    assert_eq!(tl::writer::threshold(), 9);
    assert_eq!(low.log(1, 0, 0, 0), 0);
    assert_eq!(Event::NONE.log(1, 0, 0, 0), 0);
    assert_ne!(a.log(1, 0, 0, 0), 0);
    let mut t = Tailer::open(&path).unwrap();
    let mut ev = Vec::new();
    t.poll(&mut ev).unwrap();
    assert_eq!(ev.len(), 1);
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() } as u32;
    assert_eq!((ev[0].event, ev[0].args[0], ev[0].tid), (a.id(), 1, me));

    // 40 threads one after another on 4 rings: each exiting thread gives its ring back.
    for i in 0..40 {
        std::thread::spawn(move || {
            for k in 0..10 {
                a.log(i, k, 0, 0);
            }
        })
        .join()
        .unwrap();
    }
    ev.clear();
    let s = t.poll(&mut ev).unwrap();
    assert_eq!((s.read, s.lost, s.no_ring_drops), (400, 0, 0));
    let tids: std::collections::HashSet<u32> = ev.iter().map(|e| e.tid).collect();
    assert_eq!(tids.len(), 40, "records carry their thread, whichever ring they used");

    // 6 threads at once on the 3 rings left (this thread holds one): 3 are dropped, counted.
    let bar = Arc::new(Barrier::new(6));
    let hs: Vec<_> = (0..6)
        .map(|_| {
            let bar = bar.clone();
            std::thread::spawn(move || {
                bar.wait();
                for _ in 0..10 {
                    a.log(7, 0, 0, 0);
                }
                bar.wait(); // hold the ring until all have logged
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    ev.clear();
    let s = t.poll(&mut ev).unwrap();
    assert_eq!((s.read, s.no_ring_drops), (30, 30), "3 threads logged, 3 threads' 10 events dropped and counted");

    // fork: the child writes its own file, with the parent's definitions.
    let mut fds = [0i32; 2];
    // SAFETY: pipe fills two fds.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only logs, writes to the pipe and _exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        a.log(42, 0, 0, 0);
        let p = tl::file_path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        // SAFETY: writing a live buffer to our pipe, then leaving without unwinding.
        unsafe {
            libc::write(fds[1], p.as_ptr().cast(), p.len());
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end, reading into a live buffer, reaping the child.
    let child_path = unsafe {
        libc::close(fds[1]);
        let mut buf = [0u8; 4096];
        let n = libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len());
        libc::waitpid(pid, std::ptr::null_mut(), 0);
        String::from_utf8_lossy(&buf[..n.max(0) as usize]).into_owned()
    };
    assert_ne!(child_path, path.to_string_lossy(), "the child has its own file");
    let mut ct = Tailer::open(&child_path).unwrap();
    assert_eq!(ct.info().pid, pid as u32);
    assert_eq!(ct.events()[a.id() as usize].name, "a");
    ev.clear();
    ct.poll(&mut ev).unwrap();
    assert_eq!(ev.iter().map(|e| e.args[0]).collect::<Vec<_>>(), vec![42]);
    ev.clear();
    assert_eq!(t.poll(&mut ev).unwrap().read, 0, "nothing of the child's in the parent's file");
    ct.remove_file().unwrap();
}
