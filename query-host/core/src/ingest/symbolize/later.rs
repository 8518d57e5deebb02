//! Naming stored frames after the fact (`loupe symbolize`): frames kept as `module+0xaddress`
//! because nothing named them when they were sampled carry their file's build ID and the
//! address in that file ([`loupe_store::ObjectAddress`]); once a debug file with that build ID
//! appears — a `-dbg` package installed, a build's debug file copied to a `--debug-dir` — its
//! symbol table names them, the process long gone. The store renames each frame in place, so
//! every stack, profile, pprof export and analysis that uses it sees the name.
//!
//! Only a debug file whose build ID equals the frame's is used ([`super::debug_files`]): the
//! binary is usually gone, so nothing else could prove the file matches.

use std::{collections::BTreeMap, path::PathBuf};

use blazesym::symbolize::Symbolizer as Blazesym;
use loupe_store::{Store, StoreError, TimeRange};

use super::{
    debug_files::{Binary, DebugFiles},
    name_in,
};
use loupe_api::{
    formats::hex,
    model::{ModuleNaming, SymbolizeReport},
};

/// A frame's dictionary id and its address in its file.
type FrameAt = (u32, u64);

/// Names the unnamed frames of `range` from debug files in `debug_dirs` and `/usr/lib/debug`.
pub fn name_stored_frames(
    store: &Store,
    range: TimeRange,
    debug_dirs: &[PathBuf],
) -> Result<SymbolizeReport, StoreError> {
    let unnamed = store.unnamed_frames(range)?;
    let mut by_module: BTreeMap<(Vec<u8>, String), Vec<FrameAt>> = BTreeMap::new();
    for (id, frame) in &unnamed {
        if let Some(l) = &frame.location {
            by_module.entry((l.build_id.clone(), frame.module.to_string())).or_default().push((*id, l.address));
        }
    }
    let mut debug = DebugFiles::new(debug_dirs);
    let blazesym = Blazesym::new();
    let mut names: Vec<(u32, String)> = Vec::new();
    let mut report = SymbolizeReport { unnamed: unnamed.len() as u64, ..Default::default() };
    for ((build_id, module), frames) in by_module {
        let binary = Binary { readable: None, path: None, module: &module, debuglink: None };
        let found = debug.find(&build_id, binary);
        let mut named = 0;
        if let Some(file) = &found {
            let addresses: Vec<u64> = frames.iter().map(|(_, a)| *a).collect();
            for ((id, _), name) in frames.iter().zip(name_in(&blazesym, file, &addresses)) {
                if let Some(name) = name {
                    names.push((*id, name));
                    named += 1;
                }
            }
        }
        report.modules.push(ModuleNaming {
            module,
            build_id: hex::encode(&build_id),
            frames: frames.len() as u64,
            named,
            debug_file: found.map(|f| f.display().to_string()),
        });
    }
    report.named = store.rename_frames(&names)?.renamed;
    report.modules.sort_by(|a, b| b.frames.cmp(&a.frames).then_with(|| a.module.cmp(&b.module)));
    Ok(report)
}
