// End-to-end tests of the web UI against a real `loupe serve` (node's test runner +
// playwright-core driving Debian's Chromium). Sets everything up itself (e2e/harness.mjs): a temp
// data dir filled by `loupe-synth --wide-stacks 30000`, timeline events that a real `loupe agent`
// stored from two real writer processes (`loupe-tl-testwriter`), a team token, `loupe serve` on
// port 0 with a 2-s analysis time limit; then drives the page the binary serves at `/`, one
// file of tests per view (e2e/views/), in the order below, against the one server.
//
// Env: LOUPE_BIN, LOUPE_SYNTH_BIN (default ../target/release/{loupe,loupe-synth}, honouring
// CARGO_TARGET_DIR), LOUPE_TL_WRITER_BIN (default ../target/release/loupe-tl-testwriter, same
// rule), LOUPE_WASM_DIR (default: what `loupe-synth --wasm-dir` says — the Rust
// tests' locator: $CARGO_TARGET_DIR, then udf-sdk/target), CHROMIUM (default /usr/bin/chromium),
// LOUPE_E2E_STATIC=1 (development only: serve web-ui/dist from this script, proxying /api and
// /metrics to loupe, for a binary that does not embed the UI yet).

import { after, before } from 'node:test';
import { setup, teardown } from './harness.mjs';
import './views/overview.mjs';
import './views/day.mjs';
import './views/run.mjs';
import './views/profile.mjs';
import './views/analyses.mjs';
import './views/timeline.mjs';
import './views/probes.mjs';
import './views/window.mjs';
import './views/nofleet.mjs';
import './views/narrow.mjs';
import './views/https.mjs';

before(setup);
after(teardown);
