//! The read API against a real `loupe serve`: the same JSON as the CLI, MessagePack on
//! request, clear errors, an OpenAPI document covering every route, the CLI's client mode,
//! and the token/ownership matrix.

mod common;

use common::{data::*, *};
use serde_json::{Value, json};

fn cli_json(args: &[&str]) -> Value {
    let out = loupe(args);
    assert!(out.status.success(), "loupe {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    loupe_api::formats::deep_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn reads_match_the_cli_in_json_and_msgpack() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = fill(dir.path());
    let d = dir.path().to_str().unwrap();
    // What the CLI prints from the store directly, before the server owns it.
    let list_cli = cli_json(&["runs", "list", "--json", "--data-dir", d]);
    let show_cli = cli_json(&["runs", "show", &a.to_string(), "--json", "--per-cpu", "--data-dir", d]);
    let to = (T0 + 3600 * SEC).to_string();
    let profile_cli = cli_json(&["profile", "--json", "--from", "0", "--to", &to, "--data-dir", d]);
    let profile_pid_cli = cli_json(&["profile", "--json", "--pid", "200", "--data-dir", d]);
    let days_cli = cli_json(&["days", "--json", "--data-dir", d]);
    let days_text = String::from_utf8(loupe(&["days", "--data-dir", d]).stdout).unwrap();

    let server = Server::start(dir.path(), &[]);
    let token = server.token_with("sre", "read,run,probe,fleet");
    let http = Http::new(&server.url, Some(&token));

    assert_eq!(http.get("/api/v1/runs").json(), list_cli);
    assert_eq!(http.get(&format!("/api/v1/runs/{a}?per_cpu=true")).json(), show_cli);
    assert_eq!(http.get(&format!("/api/v1/profile?from=0&to={to}")).json(), profile_cli);
    assert_eq!(http.get("/api/v1/profile?pid=200").json(), profile_pid_cli);
    // A pruned flame graph: narrow nodes left out and counted, every width and function kept.
    let whole = &profile_cli;
    let pruned = http.get(&format!("/api/v1/profile?from=0&to={to}&min_share=0.3")).json();
    let count = |n: &serde_json::Value| -> u64 {
        let mut stack = vec![n];
        let mut nodes = 0;
        while let Some(n) = stack.pop() {
            nodes += 1;
            stack.extend(n["children"].as_array().into_iter().flatten());
        }
        nodes
    };
    let (all, kept) = (count(&whole["flamegraph"]), count(&pruned["flamegraph"]));
    assert!(kept < all, "min_share=0.3 kept {kept} of {all} nodes");
    assert_eq!(pruned["pruned_nodes"], all - kept, "{pruned}");
    assert_eq!(whole["pruned_nodes"], 0);
    assert_eq!(pruned["functions"], whole["functions"]);
    assert_eq!(pruned["flamegraph"]["value"], whole["flamegraph"]["value"]);
    let total = whole["flamegraph"]["value"].as_f64().unwrap();
    let mut stack = vec![&pruned["flamegraph"]];
    while let Some(n) = stack.pop() {
        assert!(n["value"].as_f64().unwrap() >= 0.3 * total, "{n}");
        stack.extend(n["children"].as_array().into_iter().flatten());
    }
    let run_b = http.get(&format!("/api/v1/runs/{b}")).json();
    assert_eq!(run_b["metrics"]["in_bytes"][10], 200_000);
    assert!(run_b.get("per_cpu").is_none());

    // Ranges and filters.
    let listed = |q: &str| -> Vec<u64> {
        http.get(&format!("/api/v1/runs?{q}"))
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(listed(&format!("from={}&to={}", T0, T0 + SEC)), [a]);
    assert_eq!(listed("interval=10ms"), [b]);
    assert_eq!(listed("from=2026-11-23T00:00:30Z"), [b]);
    assert_eq!(listed("iface=nope"), Vec::<u64>::new());

    // The one route for every operation answers as the REST route and the control socket do.
    let called = http.post("/api/v1/call", &json!({"call": "show_run", "id": a, "per_cpu": false}));
    assert_eq!(called.status, 200);
    assert_eq!(called.json()["ok"], http.get(&format!("/api/v1/runs/{a}")).json());
    let missing = http.post("/api/v1/call", &json!({"call": "show_run", "id": 999_999, "per_cpu": false}));
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.json()["err"],
        json!({"kind": "not_found", "code": "not_found", "error": "no run with id 999999"})
    );
    // What reads the host's own files is not served, whatever the body says.
    let symbolize =
        json!({"call": "symbolize", "range": {"from_unix_ns": 0, "to_unix_ns": 1}, "debug_dirs": ["/root"]});
    let refused = http.post("/api/v1/call", &symbolize);
    assert_eq!(
        (refused.status, refused.json()["err"]["code"].clone()),
        (400, json!("local_only")),
        "{}",
        refused.json()
    );
    // Hostile bodies: an unknown operation, missing arguments, nesting past serde_json's limit.
    http.post("/api/v1/call", &json!({"call": "drop_tables"})).assert_error(422, "bad_body", "unknown variant");
    http.post("/api/v1/call", &json!({"call": "show_run"})).assert_error(422, "bad_body", "missing field");
    let deep = format!("{{\"call\": \"pids\", \"range\": {}{}}}", "[".repeat(100_000), "]".repeat(100_000));
    let answer = http.post_bytes("/api/v1/call", "application/json", deep.as_bytes());
    assert!((400..500).contains(&answer.status), "{}", answer.status);

    // MessagePack carries the same values.
    let mp = http.get_with(&format!("/api/v1/runs/{a}"), &[("Accept", "application/msgpack")]);
    assert_eq!(mp.status, 200);
    assert_eq!(mp.content_type, "application/msgpack");
    let decoded: Value = rmp_serde::from_slice(&mp.body).unwrap();
    assert_eq!(decoded, http.get(&format!("/api/v1/runs/{a}")).json());

    // /metrics is OpenMetrics, and says so: HELP and TYPE for every family, counters with
    // `_total`, and the closing `# EOF`.
    let m = http.get("/metrics");
    assert_eq!(m.content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
    let text = String::from_utf8(m.body).unwrap();
    for family in ["loupe_runs", "loupe_lost_stack_samples", "loupe_http_requests"] {
        assert!(text.contains(&format!("# HELP {family} ")), "no HELP for {family}:\n{text}");
        assert!(text.contains(&format!("# TYPE {family} ")), "no TYPE for {family}:\n{text}");
    }
    assert!(text.contains("loupe_runs 2\n"), "{text}");
    assert!(text.trim_end().ends_with("# EOF"), "{text}");

    // A MessagePack body is read like its JSON twin (and a bad one gets the usual error).
    let body = rmp_serde::to_vec_named(&serde_json::json!({"interval": "1ms"})).unwrap();
    let answer = http.post_bytes("/api/v1/runs", "application/msgpack", &body);
    answer.assert_error(409, "not_collecting", "only serves a store");
    let answer = http.post_bytes("/api/v1/runs", "application/msgpack", &[0x91; 100_000]);
    answer.assert_error(400, "bad_body", "bad MessagePack body");
    let mp = http.get_with("/api/v1/runs", &[("Accept", "application/msgpack, application/json;q=0.5")]);
    assert_eq!(rmp_serde::from_slice::<Value>(&mp.body).unwrap(), list_cli);
    // Day maps keep their integer keys in MessagePack (JSON must make them strings).
    #[derive(serde::Deserialize)]
    struct Day {
        runs_by_interval: std::collections::BTreeMap<u64, u64>,
        samples: u64,
    }
    let mp = http.get_with("/api/v1/days", &[("Accept", "application/msgpack")]);
    let days: Vec<Day> = rmp_serde::from_slice(&mp.body).unwrap();
    assert_eq!((days[0].runs_by_interval.get(&1_000_000), days[0].samples), (Some(&1), 504));

    // Days: one, with both runs and every sample.
    let days = http.get("/api/v1/days").json();
    assert_eq!(days.as_array().unwrap().len(), 1, "{days}");
    assert_eq!(days[0]["date"], "2026-11-23");
    assert_eq!(days[0]["runs_by_interval"], json!({"1000000": 1, "10000000": 1}));
    assert_eq!(days[0]["samples"], 504);
    assert!(days[0]["run_bytes"].as_u64().unwrap() > 0);

    // pprof download is gzip; pids.
    let pprof = http.get("/api/v1/profile/pprof?from=0");
    assert_eq!((pprof.status, &pprof.body[..2]), (200, &[0x1f, 0x8b][..]));
    assert_eq!(http.get("/api/v1/pids").json(), json!([0, 100, 200]));

    // Errors: JSON, fitting status, naming the problem.
    http.get("/api/v1/runs/999").assert_error(404, "not_found", "no run with id 999");
    http.get("/api/v1/runs/abc").assert_error(400, "bad_id", "bad run id 'abc'");
    // Every route that takes a range parses it in one place (the `Range` extractor): the same
    // errors everywhere, before anything else the route checks (not even being in a fleet).
    for route in [
        "/api/v1/runs",
        "/api/v1/profile",
        "/api/v1/profile/pprof",
        "/api/v1/pids",
        "/api/v1/timeline",
        "/api/v1/timeline/events",
        "/api/v1/probes",
        "/api/v1/fleet/hosts/h1/profile",
    ] {
        http.get(&format!("{route}?from=10&to=5")).assert_error(400, "bad_range", "is after");
        http.get(&format!("{route}?from=soon")).assert_error(400, "bad_time", "RFC 3339");
        http.get(&format!("{route}?to=-1x")).assert_error(400, "bad_time", "'-1x'");
    }
    http.get("/api/v1/runs?interval=fast").assert_error(400, "bad_interval", "bad interval 'fast'");
    http.get("/api/v1/profile?pid=4242").assert_error(404, "no_samples", "no samples of PID 4242");
    http.get("/api/v1/profile?min_share=1.5").assert_error(400, "bad_share", "min_share 1.5 out of bounds");
    http.get("/api/v1/profile?min_share=-0.1").assert_error(400, "bad_share", "from 0 to 1");
    http.get("/api/v1/nope").assert_error(404, "no_route", "no such route");
    http.post("/api/v1/runs", &json!({"interval": "1ms"})).assert_error(409, "not_collecting", "only serves a store");
    http.post("/api/v1/runs", &json!({"interval": 5})).assert_error(422, "bad_body", "interval");

    // The CLI's client mode prints what the local commands print.
    let remote = ["--server", server.url.as_str(), "--token", token.as_str()];
    let with = |args: &[&str]| -> Vec<String> { remote.iter().chain(args).map(|s| s.to_string()).collect() };
    let run = |args: Vec<String>| cli_json(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run(with(&["runs", "list", "--json"])), list_cli);
    assert_eq!(run(with(&["runs", "show", &a.to_string(), "--json", "--per-cpu"])), show_cli);
    assert_eq!(run(with(&["profile", "--json", "--from", "0", "--to", &to])), profile_cli);
    // An operation with no hand-written client or server code (`days`: its line in the list,
    // its core method, its CLI command) answers the same locally, through --server and at its
    // REST route.
    assert_eq!(days_cli, http.get("/api/v1/days").json());
    assert_eq!(run(with(&["days", "--json"])), days_cli);
    assert!(days_text.contains("2026-11-23") && days_text.contains("1 × 1ms, 1 × 10ms"), "{days_text}");
    let bad = loupe(&["--server", &server.url, "--token", "loupe_nope", "runs", "list"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("loupe: error: unknown or revoked token"), "{bad:?}");

    // The OpenAPI document is generated and covers every route the server answers.
    let doc = http.get("/api/v1/openapi.json").json();
    let paths = doc["paths"].as_object().unwrap();
    let want = [
        ("/api/v1/health", "get"),
        ("/api/v1/days", "get"),
        ("/api/v1/stats", "get"),
        ("/api/v1/runs", "get"),
        ("/api/v1/runs", "post"),
        ("/api/v1/runs/{id}", "get"),
        ("/api/v1/profile", "get"),
        ("/api/v1/profile/pprof", "get"),
        // Answered with a known change in tests/api.rs::a_diff_names_what_changed.
        ("/api/v1/profile/diff", "get"),
        ("/api/v1/pids", "get"),
        // Answered over every kind of data in tests/api.rs::a_window_holds_every_lane_….
        ("/api/v1/window", "get"),
        ("/api/v1/window/trace", "get"),
        // Answered with real timeline events in tests/timeline_agent.rs.
        ("/api/v1/timeline", "get"),
        ("/api/v1/timeline/events", "get"),
        // Answered with real probe sessions in tests/probes_kernel.rs; read-only here.
        ("/api/v1/probes", "get"),
        ("/api/v1/probes", "post"),
        ("/api/v1/probes/{id}", "get"),
        ("/api/v1/probes/active/{handle}/stop", "post"),
        // Answered by agents in a fleet in tests/fleet_rack.rs; refused (409) here.
        ("/api/v1/fleet/hosts", "get"),
        ("/api/v1/fleet/runs", "post"),
        ("/api/v1/fleet/invoke", "post"),
        ("/api/v1/fleet/hosts/{host}/runs/{id}", "get"),
        ("/api/v1/fleet/hosts/{host}/profile", "get"),
        ("/api/v1/udfs", "get"),
        ("/api/v1/udfs/{name}", "put"),
        ("/api/v1/udfs/{name}", "get"),
        ("/api/v1/udfs/{name}", "delete"),
        ("/api/v1/udfs/{name}/invoke", "post"),
        // Every operation at one route: read and refused above; the CLI's --server mode goes
        // through it in tests/same_errors.rs, cli_kernel.rs and fleet_rack.rs.
        ("/api/v1/call", "post"),
        ("/api/v1/openapi.json", "get"),
        ("/metrics", "get"),
    ];
    let mut n = 0;
    for (path, ops) in paths {
        for op in ops.as_object().unwrap().keys() {
            assert!(want.contains(&(path.as_str(), op.as_str())), "undocumented test gap: {op} {path}");
            assert!(ops[op]["responses"].as_object().is_some_and(|r| !r.is_empty()), "{op} {path} has no responses");
            n += 1;
        }
    }
    assert_eq!(n, want.len(), "{:?}", paths.keys().collect::<Vec<_>>());
    for (path, op) in want {
        assert!(paths.get(path).and_then(|p| p.get(op)).is_some(), "{op} {path} missing from the document");
    }
    // A store served without an agent lists probe sessions but cannot start or stop one.
    let probes = http.get("/api/v1/probes").json();
    assert_eq!((probes["active"].clone(), probes["sessions"].clone()), (json!([]), json!([])));
    http.get("/api/v1/probes/7").assert_error(404, "not_found", "no probe session with id 7");
    http.get("/api/v1/probes/x").assert_error(400, "bad_probe", "bad probe session id 'x'");
    let order = json!({"pids": [1], "functions": ["main"]});
    http.post("/api/v1/probes", &order).assert_error(409, "not_collecting", "start runs and probes on a `loupe agent`");
    http.post("/api/v1/probes/active/1/stop", &json!({})).assert_error(409, "not_collecting", "loupe agent");
    // A server outside a fleet says how to join one.
    http.get("/api/v1/fleet/hosts").assert_error(409, "not_in_fleet", "--nats URL");
    http.get("/api/v1/fleet/hosts/h1/runs/1").assert_error(409, "not_in_fleet", "--nats URL");
    http.get("/api/v1/fleet/hosts/h1/profile?from=-1h").assert_error(409, "not_in_fleet", "--nats URL");
    http.post("/api/v1/fleet/runs", &json!({"rack": "r1", "interval": "1ms"})).assert_error(
        409,
        "not_in_fleet",
        "--nats",
    );
    server.stop();
}

/// `total` of the function `name` in a profile view.
fn total_of(view: &Value, name: &str) -> Option<u64> {
    view["functions"].as_array()?.iter().find(|f| f["name"] == name)?["total"].as_u64()
}

#[test]
fn off_cpu_profiles_weigh_waits_the_same_in_the_cli_and_the_api() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    fill_waits(dir.path());
    let d = dir.path().to_str().unwrap();
    let cli = cli_json(&["profile", "--off-cpu", "--json", "--data-dir", d]);
    // 3 waits of 10 ms kept 1 in 1, 2 of 5 ms kept 1 in 4: 30 and 40 ms, in nanoseconds.
    assert_eq!((cli["kind"].as_str(), cli["samples"].as_u64()), (Some("off_cpu"), Some(5)), "{cli}");
    assert_eq!(cli["flamegraph"]["value"], 70 * MS);
    assert_eq!((total_of(&cli, "read_config"), total_of(&cli, "lock_table")), (Some(30 * MS), Some(40 * MS)));
    // The CPU profile is untouched by the waits, and says what it counts.
    let cpu = cli_json(&["profile", "--json", "--data-dir", d]);
    assert_eq!((cpu["kind"].as_str(), cpu["samples"].as_u64()), (Some("on_cpu"), Some(462)));
    assert_eq!(total_of(&cpu, "read_config"), None);
    // The text summary is in time waited.
    let text = String::from_utf8(loupe(&["profile", "--off-cpu", "--data-dir", d]).stdout).unwrap();
    assert!(text.starts_with("5 waits off the CPU sampled: 0.070 s waited in all"), "{text}");
    assert!(text.lines().any(|l| l.contains("40.0ms") && l.contains("57.1%") && l.ends_with("lock_table")), "{text}");
    // A PID that never waited is an error, as one never sampled is.
    let none = loupe(&["profile", "--off-cpu", "--pid", "4242", "--data-dir", d]);
    assert!(String::from_utf8_lossy(&none.stderr).contains("no samples of PID 4242"), "{none:?}");

    let server = Server::start(dir.path(), &[]);
    let token = server.token("sre");
    let http = Http::new(&server.url, Some(&token));
    assert_eq!(http.get("/api/v1/profile?kind=off_cpu").json(), cli);
    let one = http.get("/api/v1/profile?kind=off_cpu&pid=200").json();
    assert_eq!((one["samples"].as_u64(), one["flamegraph"]["value"].as_u64()), (Some(2), Some(40 * MS)));
    http.get("/api/v1/profile?kind=sideways").assert_error(400, "bad_query", "kind");
    // pprof: one value per stack, nanoseconds off the CPU.
    let pprof = http.get("/api/v1/profile/pprof?kind=off_cpu");
    assert_eq!((pprof.status, &pprof.body[..2]), (200, &[0x1f, 0x8b][..]));
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&pprof.body[..]), &mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("off_cpu") && text.contains("nanoseconds") && !text.contains("samples"), "{text:?}");
    // The CLI's client mode asks for the same.
    let remote = ["--server", server.url.as_str(), "--token", token.as_str(), "profile", "--off-cpu", "--json"];
    assert_eq!(cli_json(&remote), cli);
}

#[test]
fn tokens_and_ownership() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let server = Server::start(dir.path(), &[]);
    let net = server.token("netops");
    let perf = server.token("perf");
    let netops = Http::new(&server.url, Some(&net));
    let perfs = Http::new(&server.url, Some(&perf));
    let nobody = Http::new(&server.url, None);
    let stranger = Http::new(&server.url, Some("loupe_0000"));

    // Health needs no token; data does.
    assert_eq!(nobody.get("/api/v1/health").status, 200);
    nobody.get("/api/v1/runs").assert_error(401, "unauthorized", "missing bearer token");
    stranger.get("/api/v1/runs").assert_error(401, "unauthorized", "unknown or revoked token");
    nobody.put_wasm("/api/v1/udfs/x", &wasm("noop")).assert_error(401, "unauthorized", "missing bearer token");
    assert_eq!(perfs.get("/api/v1/runs").status, 200);

    // netops owns 'bursts'; perf may run it but not change it.
    netops.upload("bursts", "burst_detector");
    let body = json!({"params": {"threshold_bps": 10_000_000}});
    assert_eq!(perfs.invoke("bursts", body.clone()).status, 200, "reading and running is shared");
    perfs.put_wasm("/api/v1/udfs/bursts", &wasm("noop")).assert_error(403, "not_owner", "belongs to team 'netops'");
    perfs.delete("/api/v1/udfs/bursts").assert_error(403, "not_owner", "belongs to team 'netops'");
    assert_eq!(netops.invoke("bursts", body.clone()).json()["kind"], "table", "still the burst detector");
    let replaced = netops.put_wasm("/api/v1/udfs/bursts", &wasm("noop"));
    assert_eq!((replaced.status, replaced.json()["replaced"].clone()), (200, json!(true)));
    assert_eq!(netops.get("/api/v1/udfs/bursts").json()["description"]["name"], "noop");
    assert_eq!(netops.delete("/api/v1/udfs/bursts").status, 204);
    netops.delete("/api/v1/udfs/bursts").assert_error(404, "not_found", "no analysis named 'bursts'");

    // The CLI's `udf` commands are the same operations: the token's team uploads and owns, the
    // other team is refused in the server's words, and nothing changes.
    let udf = |token: &str, args: &[&str]| {
        let mut all = vec!["--server", server.url.as_str(), "--token", token, "udf"];
        all.extend_from_slice(args);
        loupe(&all)
    };
    let component = loupe_testbed::wasm_component("burst_detector");
    let up = udf(&net, &["upload", "cli-bursts", component.to_str().unwrap()]);
    assert!(up.status.success(), "{}", String::from_utf8_lossy(&up.stderr));
    let uploaded: Value = serde_json::from_slice(&up.stdout).unwrap();
    assert_eq!((uploaded["owner"].as_str(), uploaded["replaced"].as_bool()), (Some("netops"), Some(false)));
    let refused = udf(&perf, &["delete", "cli-bursts"]);
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("loupe: error: analysis 'cli-bursts' belongs to team 'netops'"), "{said}");
    let listed: Value = serde_json::from_slice(&udf(&perf, &["list", "--json"]).stdout).unwrap();
    assert!(listed.as_array().unwrap().iter().any(|u| u["name"] == "cli-bursts"), "{listed}");
    let invoked = udf(&perf, &["invoke", "cli-bursts", "--from", "0", "-p", "threshold_bps=10000000", "--json"]);
    assert_eq!(serde_json::from_slice::<Value>(&invoked.stdout).unwrap()["kind"], "table", "{invoked:?}");
    assert!(udf(&net, &["delete", "cli-bursts"]).status.success());

    // A revoked token stops working at once; the team's other tokens do not.
    let list = cli_json(&["token", "list", "--json", "--data-dir", dir.path().to_str().unwrap()]);
    let perf_id =
        list.as_array().unwrap().iter().find(|t| t["team"] == "perf").unwrap()["id"].as_str().unwrap().to_string();
    let stored = std::fs::read_to_string(dir.path().join("tokens.json")).unwrap();
    assert!(!stored.contains(&perf) && !stored.contains(&net), "only hashes are stored");
    let out = loupe(&["token", "revoke", &perf_id, "--data-dir", dir.path().to_str().unwrap()]);
    assert!(out.status.success());
    perfs.get("/api/v1/runs").assert_error(401, "unauthorized", "unknown or revoked token");
    assert_eq!(netops.get("/api/v1/runs").status, 200);
    let out = loupe(&["token", "revoke", "nope", "--data-dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no token with id 'nope'"));
    let out = loupe(&["token", "add", "bad team", "--data-dir", dir.path().to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad team name"));
    server.stop();

    // --no-auth: reads without a token on loopback; refused on other addresses.
    let open = Server::start(dir.path(), &["--no-auth"]);
    let anon = Http::new(&open.url, None);
    assert_eq!(anon.get("/api/v1/runs").status, 200);
    assert_eq!(anon.get("/api/v1/health").json()["auth"], false);
    Http::new(&open.url, Some("loupe_0000")).get("/api/v1/runs").assert_error(401, "unauthorized", "unknown");
    open.stop();
    let out = loupe(&["serve", "--no-auth", "--listen", "0.0.0.0:0", "--data-dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-auth is only allowed on a loopback address"));
}

/// The scope matrix, driven by the OpenAPI document: every route × a token holding each scope
/// alone, and `fleet` with each scope a fleet operation needs. A route the document gives no
/// `x-scope` fails the test; a token with the route's scopes (a fleet route's are `fleet` and
/// the operation's own) is never refused for it (401/403), one without them gets 403 with a
/// code naming the first it lacks (before its body is read: bodies here are minimal or wrong on
/// purpose), and a public route answers without a token. `POST /api/v1/call` checks the
/// operation inside: per operation. This server is in no fleet: a fleet operation allowed
/// answers `not_in_fleet` (`fleet_rack` and `fleet_leaves` ask real fleets).
#[test]
fn every_route_answers_each_scope_as_its_document_says() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = fill(dir.path());
    let server = Server::start(dir.path(), &[]);
    let scopes =
        ["read", "invoke", "upload", "run", "probe", "admin", "fleet", "fleet,read", "fleet,run", "fleet,invoke"];
    let tokens: Vec<(&str, Http)> = scopes
        .iter()
        .map(|s| (*s, Http::new(&server.url, Some(&server.token_with(&format!("t-{}", s.replace(',', "-")), s)))))
        .collect();
    let nobody = Http::new(&server.url, None);
    let doc = nobody.get("/api/v1/openapi.json").json();
    let body_of = |path: &str| match path {
        "/api/v1/runs" => json!({"interval": "1ms"}),
        "/api/v1/probes" => json!({"pids": [1], "functions": ["f"]}),
        "/api/v1/fleet/runs" => json!({"rack": "r1", "interval": "1ms"}),
        "/api/v1/fleet/invoke" => json!({"name": "x"}),
        "/api/v1/call" => json!({"call": "days"}),
        _ => json!({}),
    };
    let ask = |http: &Http, method: &str, path: &str| -> Answer {
        let url = path
            .replace("{id}", &run.to_string())
            .replace("{name}", "nothing-here")
            .replace("{handle}", "1")
            .replace("{host}", "h1");
        match method {
            "get" => http.get(&url),
            "post" => http.post(&url, &body_of(path)),
            "put" => http.put_wasm(&url, b"\0asm"),
            "delete" => http.delete(&url),
            m => panic!("a {m} route: teach the matrix"),
        }
    };
    let mut checked = 0;
    // Each action the trail must hold once per token that asked for it (refused or not).
    let mut audited = std::collections::BTreeMap::<String, usize>::new();
    let mut anonymous = 0;
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let scope = op["x-scope"].as_str().unwrap_or_else(|| panic!("{method} {path} declares no scope"));
            if scope == "none" {
                let a = ask(&nobody, method, path);
                assert!(a.status != 401 && a.status != 403, "{method} {path} is public: {}", a.status);
                continue;
            }
            assert_eq!(ask(&nobody, method, path).status, 401, "{method} {path} without a token");
            anonymous += 1;
            if let Some(action) = op["x-audited"].as_str() {
                *audited.entry(action.to_string()).or_default() += tokens.len();
            }
            // The one route's body asks `days`, which needs `read`; its errors are `{"err": …}`.
            let needs: Vec<&str> = if scope == "per-operation" { vec!["read"] } else { scope.split(',').collect() };
            for (held, http) in &tokens {
                let a = ask(http, method, path);
                let held_set: Vec<&str> = held.split(',').collect();
                let lacking = needs.iter().find(|n| !held_set.contains(n));
                if let (Some(&needed), false) = (lacking, *held == "admin") {
                    let v = a.json();
                    let err = if scope == "per-operation" { &v["err"] } else { &v };
                    assert_eq!(
                        (a.status, err["code"].as_str()),
                        (403, Some(&*format!("missing_scope_{needed}"))),
                        "{v}"
                    );
                    assert!(err["error"].as_str().unwrap().contains(&format!("needs the '{needed}' scope")), "{v}");
                } else {
                    assert!(a.status != 401 && a.status != 403, "{method} {path} refused '{held}': {}", a.json());
                    if path.starts_with("/api/v1/fleet/") {
                        a.assert_error(409, "not_in_fleet", "not in a fleet");
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 6 * 25, "only {checked} route × scope pairs");
    // Through the one route, each operation is checked as at its own.
    let (_, read) = &tokens[0];
    let (_, probe) = &tokens[4];
    let order = json!({"call": "start_probe", "order": {"pids": [1], "functions": ["f"]}});
    let refused = read.post("/api/v1/call", &order);
    assert_eq!((refused.status, refused.json()["err"]["code"].clone()), (403, json!("missing_scope_probe")));
    assert_eq!(
        probe.post("/api/v1/call", &order).json()["err"]["code"],
        "not_collecting",
        "allowed, then refused by serve"
    );
    assert_eq!(probe.post("/api/v1/call", &json!({"call": "days"})).status, 403, "probe alone cannot read");
    *audited.get_mut("start_probe").unwrap() += 2;
    // A fleet operation through the one route: `fleet`, then its own scope, then the fleet.
    let fleet_run = json!({"call": "fleet_run", "order": {"hosts": {"rack": "r1"}, "iface": null,
        "interval": {"secs": 0, "nanos": 1_000_000}, "samples": 10, "at_unix_ns": null}});
    let by = |held: &str| &tokens.iter().find(|(h, _)| *h == held).unwrap().1;
    for (held, code) in [("run", "missing_scope_fleet"), ("fleet", "missing_scope_run"), ("fleet,run", "not_in_fleet")]
    {
        let a = by(held).post("/api/v1/call", &fleet_run);
        assert_eq!(a.json()["err"]["code"], code, "{held}: {}", a.json());
    }
    *audited.get_mut("fleet_run").unwrap() += 3;
    let hosts = by("fleet,read").post("/api/v1/call", &json!({"call": "fleet_hosts", "hosts": {}}));
    assert_eq!((hosts.status, hosts.json()["err"]["code"].clone()), (409, json!("not_in_fleet")));
    // The trail: one entry per request of the matrix that would have changed something, refused
    // or not, and none for reads; with the token's id. Refusals of one token, action and
    // outcome are folded into lines with a count, written by the minute or when it stops.
    server.stop();
    let trail = loupe(&["audit", "--json", "--data-dir", dir.path().to_str().unwrap()]);
    let trail: Vec<Value> =
        String::from_utf8(trail.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let count = |e: &Value| e["count"].as_u64().unwrap_or(1) as usize;
    let mut recorded = std::collections::BTreeMap::<String, usize>::new();
    for e in trail.iter().filter(|e| e["action"] != "token_add" && e["token_id"] != "unauthenticated") {
        *recorded.entry(e["action"].as_str().unwrap().to_string()).or_default() += count(e);
    }
    assert_eq!(recorded, audited, "the trail against the document's x-audited routes");
    assert!(audited.contains_key("start_probe") && audited.contains_key("fleet_run") && audited.len() >= 5);
    let refused = trail.iter().filter(|e| e["action"] == "start_probe" && e["outcome"] == "missing_scope_probe");
    assert_eq!(
        refused.map(count).sum::<usize>(),
        8 + 1,
        "every token but probe's and admin's, and read's through the one route"
    );
    let unauthenticated = trail.iter().filter(|e| e["token_id"] == "unauthenticated");
    assert_eq!(unauthenticated.map(count).sum::<usize>(), anonymous, "every 401, folded");
    for e in trail.iter().filter(|e| e["token_id"] != "unauthenticated") {
        // Tokens are added by root on the host (the operator); everything else by a token.
        let by = if e["action"] == "token_add" { Some("operator".len()) } else { Some(12) };
        assert_eq!(e["token_id"].as_str().map(str::len), by, "{e}");
    }

    // A token made before scopes keeps what it could do then — everything but `probe`.
    let old = server_token_without_scopes(dir.path(), "old-team");
    let server = Server::start(dir.path(), &[]);
    let http = Http::new(&server.url, Some(&old));
    assert_eq!(http.get("/api/v1/runs").status, 200);
    http.post("/api/v1/runs", &json!({"interval": "1ms"})).assert_error(409, "not_collecting", "only serves a store");
    http.post("/api/v1/probes", &json!({"pids": [1], "functions": ["f"]})).assert_error(
        403,
        "missing_scope_probe",
        "--scopes read,invoke,upload,run,probe",
    );
    let list = cli_json(&["token", "list", "--json", "--data-dir", dir.path().to_str().unwrap()]);
    let old_entry = list.as_array().unwrap().iter().find(|t| t["team"] == "old-team").unwrap();
    assert_eq!(old_entry["scopes"], json!(["read", "invoke", "upload", "run"]));
    let out = loupe(&["token", "add", "x", "--scopes", "read,root", "--data-dir", dir.path().to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scope 'root'"), "{out:?}");
}

/// A token whose record has no `scopes`, as `tokens.json` was written before they existed.
fn server_token_without_scopes(data: &std::path::Path, team: &str) -> String {
    let token = token(data, team);
    let path = data.join("tokens.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for t in file["tokens"].as_array_mut().unwrap() {
        if t["team"] == team {
            t.as_object_mut().unwrap().remove("scopes");
        }
    }
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    token
}

/// The diff of two ranges with a known change (`fill_changed`: `hash` doubled in share, `new_path`
/// new, `old_path` gone, `copy` halved): the API and the CLI say exactly that, and the flame graph
/// is the changed range's with the baseline's samples on each path.
#[test]
fn a_diff_names_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    fill_changed(dir.path());
    let d = dir.path().to_str().unwrap();
    let (after, base) = (CHANGE_AFTER, CHANGE_BASE);
    let args = |json: bool| {
        let mut a = vec!["profile".to_string(), "--pid".into(), "400".into()];
        for (flag, v) in [("--from", after.0), ("--to", after.1), ("--base-from", base.0), ("--base-to", base.1)] {
            a.extend([flag.to_string(), v.to_string()]);
        }
        a.extend(if json { vec!["--json".to_string()] } else { vec![] });
        a.extend(["--data-dir".to_string(), d.to_string()]);
        a
    };
    let cli = cli_json(&args(true).iter().map(String::as_str).collect::<Vec<_>>());
    let server = Server::start(dir.path(), &[]);
    let http = Http::new(&server.url, Some(&server.token("perf")));
    let q = format!("from={}&to={}&base_from={}&base_to={}&pid=400", after.0, after.1, base.0, base.1);
    let api = http.get(&format!("/api/v1/profile/diff?{q}")).json();
    assert_eq!(api, cli, "the API and the CLI");
    assert_eq!((api["samples"].as_u64(), api["base_samples"].as_u64()), (Some(400), Some(400)));
    assert_eq!(api["new"], json!(["new_path"]));
    assert_eq!(api["gone"], json!(["old_path"]));
    let f = |name: &str| api["functions"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap().clone();
    assert_eq!(f("hash")["total_ratio"], 2.0, "doubled");
    assert!((f("hash")["self_change"].as_f64().unwrap() - 0.25).abs() < 1e-9);
    assert_eq!(f("copy")["total_ratio"], 0.5, "halved");
    assert!((f("old_path")["self_change"].as_f64().unwrap() + 0.25).abs() < 1e-9, "gone: its whole share");
    assert_eq!(f("main")["total_ratio"], 1.0, "on every stack both times");
    let main = &api["flamegraph"]["children"][0];
    assert_eq!(
        (main["name"].as_str(), main["value"].as_u64(), main["base"].as_u64()),
        (Some("main"), Some(400), Some(400))
    );
    let work = main["children"].as_array().unwrap().iter().find(|c| c["name"] == "work").unwrap();
    assert_eq!((work["value"].as_u64(), work["base"].as_u64()), (Some(300), Some(300)));
    assert!(main["children"].as_array().unwrap().iter().all(|c| c["name"] != "old_path"), "the selection's shape");
    // The text says it too; a bad baseline is refused as a bad time, naming it.
    let text = String::from_utf8(loupe(&args(false).iter().map(String::as_str).collect::<Vec<_>>()).stdout).unwrap();
    assert!(text.contains("only in the range: new_path") && text.contains("only in the baseline: old_path"), "{text}");
    assert!(text.lines().any(|l| l.contains("+25.0%") && l.ends_with("hash")), "{text}");
    http.get(&format!("/api/v1/profile/diff?from={}&base_from=soon&base_to=now", after.0)).assert_error(
        400,
        "bad_time",
        "base_from",
    );
    http.get("/api/v1/profile/diff?from=0").assert_error(400, "bad_query", "base_from");
    server.stop();
}

/// Counts of `items` by key.
fn counts<K: Ord>(items: impl IntoIterator<Item = K>) -> std::collections::BTreeMap<K, u64> {
    let mut out = std::collections::BTreeMap::new();
    for k in items {
        *out.entry(k).or_default() += 1;
    }
    out
}

#[test]
fn a_window_holds_every_lane_as_the_store_has_it_and_exports_as_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (_, run_b) = fill(dir.path());
    let probes = fill_probes(dir.path(), DEFAULT_SEED);
    fill_waits(dir.path());
    fill_timeline(dir.path());
    let (from, to) = (T0 + 60 * SEC, T0 + 65 * SEC);
    let server = Server::start(dir.path(), &[]);
    let http = Http::new(&server.url, Some(&server.token("sre")));
    let w = http.get(&format!("/api/v1/window?from={from}&to={to}")).json();
    let col = |v: &Value, k: &str| v[k].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect::<Vec<u64>>();

    // Traffic: run B's first 500 slots of 10 ms, as the run's own page has them.
    let run = http.get(&format!("/api/v1/runs/{run_b}")).json();
    let lane = w["traffic"].as_array().unwrap().iter().find(|l| l["run"] == run_b).expect("run B's lane");
    assert_eq!((lane["first_slot"].as_u64(), lane["offset_ns"].as_i64()), (Some(0), Some(0)));
    let in_bytes = lane["series"].as_array().unwrap().iter().find(|s| s["name"] == "in_bytes").unwrap();
    assert_eq!(col(in_bytes, "values"), col(&run["metrics"], "in_bytes")[..500]);
    assert_eq!(w["traffic"].as_array().unwrap().len(), 1, "run A ended a minute before");

    // CPUs: every non-idle sample of the range, on its CPU, with its process and stack.
    let want = counts(
        samples().into_iter().flatten().filter(|s| !s.idle && (from..to).contains(&s.time_unix_ns)).map(|s| s.cpu),
    );
    let cpus = w["cpus"].as_array().unwrap();
    let got = cpus.iter().map(|c| (c["cpu"].as_u64().unwrap() as u32, c["samples"].as_u64().unwrap())).collect();
    assert_eq!(want, got);
    let (procs, stacks, fns) = (&w["processes"], &w["stacks"], &w["functions"]);
    let mut hot = 0;
    for c in cpus {
        let t = &c["ticks"];
        assert_eq!(t["summarized"], false);
        assert_eq!(col(t, "t_ns").len() as u64, c["samples"].as_u64().unwrap());
        assert!(col(t, "t_ns").iter().all(|&o| o < to - from), "offsets inside the window");
        for (p, s) in col(t, "process").into_iter().zip(col(t, "stack")) {
            let leaf = &fns[stacks[s as usize][0].as_u64().unwrap() as usize]["name"];
            if leaf == "hot_leaf" {
                assert_eq!((&procs[p as usize]["pid"], &procs[p as usize]["comm"]), (&json!(100), &json!("svc")));
                hot += 1;
            }
        }
    }
    let profile = http.get(&format!("/api/v1/profile?from={from}&to={to}")).json();
    let hot_self = profile["functions"].as_array().unwrap().iter().find(|f| f["name"] == "hot_leaf").unwrap();
    assert_eq!(hot_self["self"], hot, "the ticks' stacks are the profile's");
    let want_waits = waits().iter().filter(|w| (from..to).contains(&w.sample.time_unix_ns)).count() as u64;
    let wait_count: u64 = cpus.iter().map(|c| c["waits"].as_u64().unwrap()).sum();
    assert!(want_waits > 0);
    assert_eq!(
        (wait_count, cpus.iter().map(|c| col(&c["wait_spans"], "dur_ns").len() as u64).sum()),
        (want_waits, want_waits)
    );

    // Probe calls: per thread, those of the session that began in the window, nested by depth.
    let session = http.get(&format!("/api/v1/probes/{}?calls=true", probes[1])).json();
    let calls = session["calls"].as_array().unwrap();
    let want = counts(
        calls
            .iter()
            .filter(|c| (from..to).contains(&c["entry_unix_ns"].as_u64().unwrap()))
            .map(|c| c["tid"].as_u64().unwrap()),
    );
    let threads = w["probes"].as_array().unwrap();
    let got = threads.iter().map(|t| (t["tid"].as_u64().unwrap(), t["calls"].as_u64().unwrap())).collect();
    assert_eq!(want, got);
    assert_eq!(want.len(), 2, "the session's two threads");
    for t in threads {
        let (ts, durs, depth) = (col(t, "t_ns"), col(t, "dur_ns"), col(t, "depth"));
        assert!(ts.windows(2).all(|p| p[0] <= p[1]), "entry order");
        assert!(depth.contains(&0) && depth.iter().any(|&d| d > 0), "outer and nested calls");
        // Slow: at or past the function's slow_ns.
        for ((f, d), slow) in col(t, "function").into_iter().zip(&durs).zip(t["slow"].as_array().unwrap()) {
            let limit = w["probe_functions"][f as usize]["slow_ns"].as_u64().unwrap();
            assert_eq!(slow.as_bool().unwrap(), *d >= limit);
        }
        assert!(t["slow"].as_array().unwrap().iter().any(|s| s == true), "the 10× forwards are slow");
    }

    // Timeline: 500 iterations of pktloop in 5 s, each event with its definition's names.
    let programs = w["programs"].as_array().unwrap();
    assert_eq!(programs.len(), 1);
    let p = &programs[0];
    assert_eq!(
        (p["pid"].as_u64(), p["events"].as_u64(), p["summarized"].as_bool()),
        (Some(500), Some(1500), Some(false))
    );
    let names: Vec<&str> = p["definitions"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    let rx = names.iter().position(|n| *n == "rx_batch").unwrap();
    assert_eq!(p["definitions"][rx]["arg_names"], json!(["packets", "bytes"]));
    let listed = http.get(&format!("/api/v1/timeline?from={from}&to={to}")).json();
    assert_eq!(listed["events"].as_array().unwrap().iter().map(|e| e["count"].as_u64().unwrap()).sum::<u64>(), 1500);
    let (events, args) = (col(p, "event"), &p["args"]);
    let i = events.iter().position(|&e| e as usize == rx).unwrap() + 3 * 7; // the 8th iteration's rx_batch
    assert_eq!((&args[0][i], &args[1][i]), (&json!(7), &json!(7 * 64)), "packets and bytes of iteration 7");
    assert_eq!((args[2].as_array().unwrap().len(), args[3].as_array().unwrap().len()), (0, 0), "unused columns empty");

    // A small lane limit: every lane summarized, its columns summing to the same counts.
    let s = http.get(&format!("/api/v1/window?from={from}&to={to}&lane_items=10&columns=500")).json();
    for (c, full) in s["cpus"].as_array().unwrap().iter().zip(cpus) {
        assert_eq!(c["ticks"]["summarized"], true);
        assert_eq!(col(&c["ticks"], "column_count").iter().sum::<u64>(), full["samples"].as_u64().unwrap());
        assert_eq!(col(&c["ticks"], "column_count").len(), 500);
        // Each column with samples names its top process; empty ones none.
        for (n, p) in col(&c["ticks"], "column_count").into_iter().zip(col(&c["ticks"], "column_process")) {
            assert!(if n > 0 {
                (p as usize) < s["processes"].as_array().unwrap().len()
            } else {
                p == u64::from(u32::MAX)
            });
        }
        assert!(col(&c["ticks"], "t_ns").is_empty());
    }
    let sp = &s["programs"][0];
    assert_eq!((sp["summarized"].as_bool(), col(sp, "column_count").iter().sum::<u64>()), (Some(true), 1500));
    // The longest level-0 lag: `loop`'s, the 9 ms from a 1-ms iteration's end to the next start.
    assert_eq!(col(sp, "column_max_lag_ns").into_iter().max(), Some(9 * MS));
    let st = &s["probes"][0];
    assert_eq!(col(st, "column_count").iter().sum::<u64>(), st["calls"].as_u64().unwrap());

    // MessagePack carries the same; the CLI says the same.
    let mp = http.get_with(&format!("/api/v1/window?from={from}&to={to}"), &[("Accept", "application/msgpack")]);
    assert_eq!(rmp_serde::from_slice::<Value>(&mp.body).unwrap(), w);
    let d = dir.path().to_str().unwrap();
    let (f, t) = (from.to_string(), to.to_string());
    assert_eq!(cli_json(&["window", "--from", &f, "--to", &t, "--json", "--data-dir", d]), w);
    let text = String::from_utf8(loupe(&["window", "--from", &f, "--to", &t, "--data-dir", d]).stdout).unwrap();
    for line in ["traffic: 1 runs", "cpus: 2 with samples", "probe calls: 2 threads", "timeline: 1 programs"] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    assert!(text.lines().any(|l| l.contains("pktloop") && l.contains("1500 events (every item)")), "{text}");

    // Bad windows: refused, saying why.
    http.get(&format!("/api/v1/window?from={from}")).assert_error(400, "bad_window", "both ends");
    http.get(&format!("/api/v1/window?from={from}&to={to}&columns=5")).assert_error(400, "bad_window", "columns");
    http.get(&format!("/api/v1/window?from={from}&to={to}&series=nope")).assert_error(400, "bad_window", "in_bytes");
    http.get(&format!("/api/v1/window?from={from}&to={to}&lane_items=0")).assert_error(400, "bad_limit", "limit 0");

    // The trace: well formed, and per thread as many samples, calls and events as the store has.
    let trace_path = dir.path().join("trace.json");
    let out =
        loupe(&["export", "trace", "--from", &f, "--to", &t, "-o", trace_path.to_str().unwrap(), "--data-dir", d]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file = std::fs::read(&trace_path).unwrap();
    let api = http.get(&format!("/api/v1/window/trace?from={from}&to={to}"));
    assert_eq!((api.status, &api.body), (200, &file), "the API's trace is the CLI's");
    let trace: loupe_api::formats::trace::Trace = serde_json::from_slice(&file).expect("a trace file");
    assert_eq!(trace.display_time_unit, "ns");
    assert_eq!(trace.other_data["from_unix_ns"], from.to_string());
    let mut open = std::collections::HashMap::new();
    for e in &trace.trace_events {
        let ts = e.ts.unwrap_or(0.0);
        match e.ph.as_str() {
            "M" => assert!(e.args.as_ref().is_some_and(|a| a["name"].is_string()), "metadata names something"),
            "i" => assert_eq!(e.s.as_deref(), Some("t"), "instants on their thread"),
            "X" => assert!(e.dur.is_some_and(|d| d >= 0.0)),
            "b" => assert!(open.insert(e.id.unwrap(), ts).is_none(), "async ids unique"),
            "e" => assert!(open.remove(&e.id.unwrap()).is_some_and(|b| b <= ts), "an end after its begin"),
            "C" => assert!(e.args.as_ref().is_some_and(|a| a["value"].is_u64())),
            other => panic!("phase {other}"),
        }
        assert!(e.ph == "M" || (0.0..(to - from) as f64 / 1e3).contains(&ts) || e.ph == "b", "ts {ts} of {}", e.ph);
    }
    assert!(open.is_empty(), "every async slice ends");
    let by =
        |cat: &str, ph: &str| counts(trace.trace_events.iter().filter(|e| e.cat == cat && e.ph == ph).map(|e| e.tid));
    let samples_per_tid = counts(
        samples().into_iter().flatten().filter(|s| !s.idle && (from..to).contains(&s.time_unix_ns)).map(|s| s.tid),
    );
    assert_eq!(by("sample", "i"), samples_per_tid);
    let calls_per_tid: std::collections::BTreeMap<u32, u64> = want.iter().map(|(&t, &n)| (t as u32, n)).collect();
    assert_eq!(by("probe", "X"), calls_per_tid);
    assert_eq!(by("timeline", "i"), [(501, 1500)].into());
    assert_eq!(
        by("iteration", "b").values().sum::<u64>(),
        999,
        "each loop_end, and each loop but the first, has a lag"
    );
    assert_eq!(by("traffic", "C").values().sum::<u64>(), 1000, "two series of 500 slots");
    let rx = trace.trace_events.iter().find(|e| e.name == "rx_batch").unwrap();
    assert!(rx.args.as_ref().unwrap().get("packets").is_some(), "arguments by name");
    server.stop();
}

/// One hand-written HTTP/1.1 request (a browser's `Host` and `Origin` are what is tested, and
/// an HTTP client sets `Host` from its URL): the status and the body.
fn raw_request(url: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        request += &format!("{name}: {value}\r\n");
    }
    if !body.is_empty() {
        request += "Content-Type: application/json\r\n";
    }
    stream.write_all(format!("{request}\r\n{body}").as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

/// A page that rebinds its own name to 127.0.0.1 reaches the agent with its name in `Host`:
/// refused (421) on every route, the web UI too, though `--no-auth` would serve it. A page of
/// another origin may not change anything (403), though it may send a form's POST.
#[test]
fn a_rebinding_page_and_a_foreign_origin_are_refused_under_no_auth() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &["--no-auth", "--allowed-host", "loupe.test"]);
    let port = server.url.trim_end_matches('/').rsplit(':').next().unwrap().to_string();
    let at = |host: &str| format!("{host}:{port}");
    for path in ["/api/v1/health", "/api/v1/runs", "/", "/metrics"] {
        let (status, body) = raw_request(&server.url, "GET", path, &[("Host", &at("evil.example"))], "");
        assert_eq!(status, 421, "{path}: {body}");
        assert!(body.contains("misdirected_host") && body.contains("--allowed-host"), "{path}: {body}");
    }
    for host in ["127.0.0.1", "localhost", "loupe.test", "LOUPE.TEST"] {
        let (status, body) = raw_request(&server.url, "GET", "/api/v1/runs", &[("Host", &at(host))], "");
        assert_eq!(status, 200, "{host}: {body}");
    }
    let read = r#"{"call": "show_run", "id": 999999, "per_cpu": false}"#;
    let own = at("127.0.0.1");
    let post = |origin: Option<&str>| {
        let mut headers = vec![("Host", own.as_str())];
        headers.extend(origin.map(|o| ("Origin", o)));
        raw_request(&server.url, "POST", "/api/v1/call", &headers, read)
    };
    for foreign in ["http://evil.example", "null", &format!("http://localhost:{port}"), "http://127.0.0.1:1"] {
        let (status, body) = post(Some(foreign));
        assert_eq!(status, 403, "{foreign}: {body}");
        assert!(body.contains("foreign_origin"), "{foreign}: {body}");
    }
    // The web UI's own origin, and a client that sends none, reach the route (its own 404).
    for origin in [Some(format!("http://127.0.0.1:{port}")), None] {
        let (status, body) = post(origin.as_deref());
        assert_eq!(status, 404, "{origin:?}: {body}");
    }
    // A read from another origin is served: the browser keeps its answer from that page.
    let (status, _) =
        raw_request(&server.url, "GET", "/api/v1/runs", &[("Host", &own), ("Origin", "http://evil.example")], "");
    assert_eq!(status, 200);
    server.stop();
    let out = loupe(&["serve", "--allowed-host", "a/b", "--data-dir", data.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("'a/b' is not a host name"));
}

/// Every path under `dir` with a group or other permission bit (links not followed).
fn shared_paths(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            continue;
        }
        // The control socket is 0600 too, like every other file.
        if meta.mode() & 0o077 != 0 {
            out.push(format!("{} {:o}", path.display(), meta.mode() & 0o7777));
        }
        if meta.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    out
}

/// The data dir holds every stack, probe session and analysis: made 0700 with 0600 files, and
/// a looser one from before tightened at start, with a line in the log.
#[test]
fn the_data_dir_and_what_it_holds_are_its_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("var/loupe");
    let token = token(&data, "t");
    let server = Server::start(&data, &[]);
    let http = Http::new(&server.url, Some(&token));
    http.upload("hot", "noop");
    server.stop();
    assert_eq!(shared_paths(&data), Vec::<String>::new());
    assert!(std::fs::read_dir(&data).unwrap().count() >= 3, "the store, tokens and analyses are there");
    // As an older Loupe (or a hand-made dir) left it.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(data.join("tokens.json"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loupe"))
        .args(["runs", "list", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("readable by other users") && log.contains("paths=2") && log.contains("755"), "{log}");
    assert_eq!(shared_paths(&data), Vec::<String>::new());
}

/// `loupe token add` and `loupe token revoke` run at the same moment, as processes, while a
/// server answers: every added token works and every revoked one is refused — none lost, none
/// brought back by a process writing back what it read before another's change.
#[test]
fn token_adds_and_revokes_at_the_same_moment_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let doomed: Vec<String> = (0..16).map(|_| token(dir.path(), "doomed")).collect();
    let listed = |data: &str| -> Vec<Value> {
        let out = loupe(&["token", "list", "--json", "--data-dir", data]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
    };
    let ids: Vec<String> = listed(data).iter().map(|t| t["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 16);
    let server = Server::start(dir.path(), &[]);
    let added: Vec<String> = std::thread::scope(|s| {
        let adders: Vec<_> =
            (0..2).map(|_| s.spawn(|| (0..12).map(|_| token(dir.path(), "kept")).collect::<Vec<_>>())).collect();
        for chunk in ids.chunks(8) {
            s.spawn(move || {
                for id in chunk {
                    let out = loupe(&["token", "revoke", id, "--data-dir", data]);
                    assert!(out.status.success(), "revoke {id}: {}", String::from_utf8_lossy(&out.stderr));
                }
            });
        }
        adders.into_iter().flat_map(|a| a.join().unwrap()).collect()
    });
    let now = listed(data);
    assert_eq!(now.len(), 24, "every added token there, every revoked one gone: {now:?}");
    assert!(now.iter().all(|t| t["team"] == "kept"), "{now:?}");
    for t in &added {
        assert_eq!(Http::new(&server.url, Some(t)).get("/api/v1/runs").status, 200, "an added token works");
    }
    for t in &doomed {
        Http::new(&server.url, Some(t)).get("/api/v1/runs").assert_error(401, "unauthorized", "unknown or revoked token");
    }
    server.stop();
}

/// A client that invokes names it makes up (10,000 of them) leaves `/metrics` the size it was:
/// they are counted under one label, never named.
#[test]
fn made_up_analysis_names_leave_metrics_the_same_size() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &["--no-auth"]);
    let http = Http::new(&server.url, None);
    http.upload("hot", "noop");
    let body = json!({"params": {}});
    assert_eq!(http.invoke("hot", body.clone()).status, 200);
    http.invoke("made-up-0", body.clone()).assert_error(404, "not_found", "made-up-0");
    let before = http.get("/metrics").body.len();
    for i in 1..10_000 {
        assert_eq!(http.invoke(&format!("made-up-{i}"), body.clone()).status, 404);
    }
    let metrics = String::from_utf8(http.get("/metrics").body).unwrap();
    assert!(!metrics.contains("made-up"), "{metrics}");
    assert!(metrics.contains(r#"analysis="(unknown)",cause="not_found"} 10000"#), "{metrics}");
    assert!(metrics.contains(r#"loupe_analysis_invocations_total{analysis="hot"} 1"#), "{metrics}");
    // The counters' digits may grow; nothing else.
    assert!(metrics.len() <= before + 16, "{before} → {} bytes", metrics.len());
    server.stop();
}

/// 30,000 refusals from one `read` token, and 1,000 requests with a made-up token, leave the
/// action before them readable in `loupe audit`: they are folded by the minute, with counts.
#[test]
fn a_flood_of_refusals_cannot_flush_the_audit_trail() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let owner = Http::new(&server.url, Some(&server.token("netops")));
    owner.upload("bursts", "noop");
    let reader = Http::new(&server.url, Some(&server.token_with("perf", "read")));
    for _ in 0..30_000 {
        assert_eq!(reader.delete("/api/v1/udfs/bursts").status, 403);
    }
    let stranger = Http::new(&server.url, Some("made-up-token"));
    for _ in 0..1_000 {
        assert_eq!(stranger.get("/api/v1/runs").status, 401);
    }
    server.stop();
    let out = loupe(&["audit", "--json", "--data-dir", data.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let entries: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let count = |e: &Value| e["count"].as_u64().unwrap_or(1);
    assert!(
        entries.iter().any(|e| e["action"] == "upload_udf" && e["outcome"] == "ok" && e["team"] == "netops"),
        "{entries:?}"
    );
    let refused: Vec<&Value> = entries.iter().filter(|e| e["outcome"] == "missing_scope_upload").collect();
    assert_eq!(refused.iter().map(|e| count(e)).sum::<u64>(), 30_000);
    assert!(refused.len() <= 2 * 3, "a first line and a folded one per minute: {}", refused.len());
    let unauthenticated: Vec<&Value> = entries.iter().filter(|e| e["token_id"] == "unauthenticated").collect();
    assert_eq!(unauthenticated.iter().map(|e| count(e)).sum::<u64>(), 1_000);
    // The table shows a folded line's count.
    let text = loupe(&["audit", "--data-dir", data.path().to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("missing_scope_upload ×"));
}

/// A token on the command line shows in `ps`: the CLI also takes it from `$LOUPE_TOKEN` or a file.
#[test]
fn the_cli_takes_its_token_from_a_file_or_the_environment() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &[]);
    let token = server.token("sre");
    let file = data.path().join("token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    let cli = |args: &[&str], env: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_loupe"));
        cmd.args(["--server", &server.url]).args(args).args(["days", "--json"]).env("RUST_LOG", "off");
        cmd.env_remove("LOUPE_TOKEN");
        if let Some(token) = env {
            cmd.env("LOUPE_TOKEN", token);
        }
        cmd.output().unwrap()
    };
    assert!(cli(&["--token-file", file.to_str().unwrap()], None).status.success());
    assert!(cli(&[], Some(&token)).status.success());
    let refused = cli(&[], None);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("missing bearer token"));
    std::fs::write(&file, "\n").unwrap();
    let empty = cli(&["--token-file", file.to_str().unwrap()], None);
    assert!(String::from_utf8_lossy(&empty.stderr).contains("no token in it"), "{empty:?}");
    server.stop();
}

/// One team cannot fill the data dir: past its number of analyses it is refused (409), while
/// replacing its own and other teams' uploads go on; an admin deletes any team's analysis.
#[test]
fn a_team_stores_within_its_bounds_and_an_admin_acts_on_any_teams_analysis() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), &["--udf-team-analyses", "2"]);
    let netops = Http::new(&server.url, Some(&server.token("netops")));
    let perf = Http::new(&server.url, Some(&server.token("perf")));
    let admin = Http::new(&server.url, Some(&server.token_with("sre", "admin")));
    netops.upload("a", "noop");
    netops.upload("b", "noop");
    netops.put_wasm("/api/v1/udfs/c", &wasm("noop")).assert_error(409, "team_analyses_full", "at most 2");
    netops.upload("a", "noop"); // a replacement takes no more room
    perf.upload("c", "noop");
    perf.delete("/api/v1/udfs/a").assert_error(403, "not_owner", "belongs to team 'netops'");
    assert_eq!(admin.delete("/api/v1/udfs/a").status, 204, "an admin acts on any team's analysis");
    netops.upload("d", "noop");
    let listed = netops.get("/api/v1/udfs").json();
    let owners: Vec<(String, String)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["name"].as_str().unwrap().to_string(), u["owner"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(owners.len(), 3, "{listed}");
    assert!(owners.contains(&("d".into(), "netops".into())) && owners.contains(&("c".into(), "perf".into())));
    server.stop();
}
