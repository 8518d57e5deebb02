//! A command fails the same way whichever way it reaches the host: on a store it opens itself,
//! through the control socket of the process that holds the store, and through that process's
//! HTTP API (`--server`) — the same one line on stderr, the same exit code, and for a read
//! that works, the same output. (Needs no root: `loupe serve` holds the store.)

mod common;

use common::{data::*, *};

/// Exit code, stdout and stderr of `loupe args`.
fn outcome(args: &[String]) -> (Option<i32>, String, String) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = loupe(&args);
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn local_agent_and_remote_commands_print_the_same_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = fill(dir.path());
    let d = dir.path().to_str().unwrap().to_string();
    let commands: Vec<Vec<String>> = [
        vec!["runs", "show", "999999"],
        vec!["runs", "export", "999999", "--format", "millisampler"],
        vec!["runs", "show", "yesterday"],
        vec!["profile", "--pid", "4000000", "--from", "0"],
        vec!["profile", "--off-cpu", "--pid", "4000000", "--from", "0"],
        vec!["probes", "show", "999"],
        // One that works: the same output too.
        vec!["runs", "show", &a.to_string(), "--json"],
        vec!["profile", "--json", "--from", "0"],
    ]
    .into_iter()
    .map(|c| c.into_iter().map(String::from).collect())
    .collect();
    let with_dir = |c: &Vec<String>| [c.clone(), vec!["--data-dir".into(), d.clone()]].concat();

    let local: Vec<_> = commands.iter().map(|c| outcome(&with_dir(c))).collect();
    let server = Server::start(dir.path(), &[]);
    let token = server.token("sre");
    for (how, run) in [
        ("through the control socket", Box::new(|c: &Vec<String>| outcome(&with_dir(c))) as Box<dyn Fn(&_) -> _>),
        (
            "through the HTTP API",
            Box::new(|c: &Vec<String>| {
                outcome(
                    &[vec!["--server".into(), server.url.clone(), "--token".into(), token.clone()], c.clone()].concat(),
                )
            }),
        ),
    ] {
        for (command, want) in commands.iter().zip(&local) {
            let got = run(command);
            assert_eq!(&got, want, "loupe {} {how}", command.join(" "));
        }
    }
    // The errors are the host's own, not a transport's.
    assert_eq!(local[0].0, Some(1));
    assert_eq!(local[0].2, "loupe: error: no run with id 999999\n");
    assert!(local[3].2.contains("no samples of PID 4000000"), "{}", local[3].2);
    assert!(local[5].2.contains("no probe session with id 999"), "{}", local[5].2);
    assert_eq!(local[6].0, Some(0), "{}", local[6].2);

    // What only a local store offers says so through the API, in one line.
    let remote = |args: &[&str]| {
        let mut all = vec!["--server".to_string(), server.url.clone(), "--token".into(), token.clone()];
        all.extend(args.iter().map(|a| a.to_string()));
        outcome(&all)
    };
    let (code, _, err) = remote(&["symbolize", "--from", "0"]);
    assert_eq!(
        (code, err.as_str()),
        (
            Some(1),
            "loupe: error: symbolize reads debug files on the host that holds the samples: run it there (drop --server)\n"
        )
    );
    server.stop();
}
