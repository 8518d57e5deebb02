//! Naming frames after the fact: `unnamed_frames` finds exactly the frames of a range that are
//! still named by address (with a build ID), `rename_frames` renames them in every stack that
//! uses them, survives a reopen, and refuses what would break the dictionary's identity.

mod common;

use common::samples::sample;
use common::{SEC, T0, open_store};
use loupe_store::{Frame, Name, ObjectAddress, ProfileQuery, Renamed, Retention, Store, TimeRange};

fn at(build_id: &[u8], address: u64) -> ObjectAddress {
    ObjectAddress { build_id: build_id.to_vec(), address }
}

fn names_in(store: &Store, range: TimeRange) -> Vec<Name> {
    let p = store.profile(&ProfileQuery::range(range)).unwrap();
    let mut names: Vec<Name> = p.stacks.iter().flat_map(|(f, _)| f.iter().map(|f| f.function.clone())).collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn unnamed_frames_are_found_by_range_and_renamed_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path(), Retention::default());
    let main = Frame::user("main", "prog");
    let hot = Frame::unnamed("libc.so.6", at(&[0x93, 0xac], 0x1750ce));
    let later = Frame::unnamed("libz.so.1", at(&[0x11], 0x4242));
    let no_build_id = Frame::unnamed("anon.so", at(&[], 0x10));
    // Batch 1 (T0): the libc frame under main, and a frame without a build ID.
    let b1 = vec![
        sample(T0, 0, 10, "prog", vec![hot.clone(), main.clone()]),
        sample(T0 + 100_000_000, 1, 10, "prog", vec![hot.clone(), Frame::user("other", "prog"), main.clone()]),
        sample(T0 + 200_000_000, 1, 11, "x", vec![no_build_id.clone()]),
    ];
    // Batch 2 (T0 + 60 s): the libz frame only.
    let b2 = vec![sample(T0 + 60 * SEC, 0, 12, "z", vec![later.clone(), main.clone()])];
    store.put_samples(&b1, 0, T0).unwrap();
    store.put_samples(&b2, 0, T0).unwrap();

    let first = TimeRange::new(T0, T0 + 30 * SEC).unwrap();
    let found = store.unnamed_frames(first).unwrap();
    assert_eq!(found.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>(), vec![hot.clone()]);
    let all = store.unnamed_frames(TimeRange::ALL).unwrap();
    assert_eq!(all.len(), 2, "{all:?}");

    let hot_id = found[0].0;
    let done = store.rename_frames(&[(hot_id, "__strpbrk_sse42".into())]).unwrap();
    assert_eq!(done, Renamed { renamed: 1, skipped: 0 });
    let names = names_in(&store, first);
    assert!(names.iter().any(|n| n == "__strpbrk_sse42") && !names.contains(&hot.function), "{names:?}");
    // Both stacks that used the frame see the name; module and location stay.
    let p = store.profile(&ProfileQuery::range(first)).unwrap();
    let renamed: Vec<&Frame> =
        p.stacks.iter().flat_map(|(f, _)| f.iter()).filter(|f| f.function == "__strpbrk_sse42").collect();
    assert_eq!(p.stacks.iter().filter(|(f, _)| f[0].function == "__strpbrk_sse42").count(), 2);
    assert!(renamed.iter().all(|f| f.module == "libc.so.6" && f.location == hot.location));
    // Raw samples and an analysis' cursor (stack ids resolved through the dictionary) see it.
    let raw = store.samples(&ProfileQuery::range(first)).unwrap();
    assert_eq!(raw.iter().filter(|s| s.frames.first().is_some_and(|f| f.function == "__strpbrk_sse42")).count(), 2);
    let mut cursor = store.sample_cursor(ProfileQuery::range(first)).unwrap();
    let page = cursor.next_page().unwrap().unwrap();
    let stacks: Vec<u32> = page.iter().map(|s| s.stack).collect();
    let leaves: Vec<Name> =
        store.stack_frames(&stacks).unwrap().iter().filter_map(|f| f.first()).map(|f| f.function.clone()).collect();
    assert_eq!(leaves.iter().filter(|n| *n == "__strpbrk_sse42").count(), 2, "{leaves:?}");
    // No longer unnamed; a second rename of it is skipped, as are unknown ids and empty names.
    assert!(store.unnamed_frames(first).unwrap().is_empty());
    let again = store.rename_frames(&[(hot_id, "x".into()), (999_999, "y".into()), (all[1].0, String::new())]).unwrap();
    assert_eq!(again, Renamed { renamed: 0, skipped: 3 });

    // The dictionary on disk says the same after a reopen, and verifies.
    drop((cursor, store));
    let store = open_store(dir.path(), Retention::default());
    assert!(names_in(&store, first).contains(&Name::from("__strpbrk_sse42")));
    assert_eq!(store.unnamed_frames(TimeRange::ALL).unwrap().len(), 1);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    // A batch written after the rename that samples the same address again gets a new frame
    // (the unnamed content is free again) — never the renamed one's id by accident.
    store.put_samples(&[sample(T0 + 120 * SEC, 0, 10, "prog", vec![hot.clone(), main.clone()])], 0, T0).unwrap();
    let late = TimeRange::new(T0 + 120 * SEC, T0 + 121 * SEC).unwrap();
    assert_eq!(names_in(&store, late), vec!["libc.so.6+0x1750ce".to_string(), "main".to_string()]);
    assert!(names_in(&store, first).contains(&Name::from("__strpbrk_sse42")));
}
