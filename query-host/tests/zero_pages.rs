//! `app::zero_pages` with the allocator the `loupe` binary uses: which pages are given back,
//! that no value changes, and that opening the store no longer leaves sled's 20 MiB of unused
//! zeroed histograms resident.

use std::time::Duration;

use loupe_query_host::{
    app::{open_store, zero_pages},
    cli::StoreArgs,
};

#[global_allocator]
static ALLOCATOR: zero_pages::Allocator = zero_pages::Allocator;

const PAGE: usize = 4096;
const BLOCK: usize = 512 << 10;

/// How many of the whole pages inside `block` are resident (mincore).
fn resident_pages(block: &[u8]) -> usize {
    let start = (block.as_ptr() as usize).next_multiple_of(PAGE);
    let end = (block.as_ptr() as usize + block.len()) / PAGE * PAGE;
    let mut vec = vec![0u8; (end - start) / PAGE];
    // SAFETY: `start..end` is page-aligned memory of a live allocation; `vec` has one byte per page.
    let rc = unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    vec.iter().filter(|&&b| b & 1 == 1).count()
}

/// A block written with zeros byte by byte (as sled fills its histograms), so all its pages are
/// resident.
fn zeroed_block(len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    v.resize_with(len, || std::hint::black_box(0u8));
    v
}

fn rss_kib() -> usize {
    loupe_testbed::sampling::process_status_kb(std::process::id(), "VmRSS:").expect("this process's status") as usize
}

#[test]
fn zero_pages_of_watched_blocks_are_given_back_and_no_value_changes() {
    // 1. Opening the store: sled's first open in this process, so its metrics are built here.
    let dir = tempfile::tempdir().unwrap();
    let args = StoreArgs {
        data_dir: dir.path().to_path_buf(),
        retention: Duration::from_secs(3600),
        max_bytes: 1 << 30,
        audit_files: 4,
    };
    let before = rss_kib();
    let store = open_store(&args).unwrap();
    let grew = rss_kib().saturating_sub(before);
    assert!(grew < 10 << 10, "opening the store left {grew} KiB more resident (sled's histograms are 20,480 KiB)");
    assert!(
        store.days().unwrap().is_empty() && store.stats().is_ok(),
        "the store works after its zero pages went back"
    );

    // 2. Blocks of the watched size: zero pages go back, pages with data stay, values are kept.
    // A block goes back as soon as the next of its size is allocated: `zero` when `data` is,
    // `data` (written after) at the explicit release.
    let (mut zero, mut data, other) =
        zero_pages::watch(BLOCK, || (zeroed_block(BLOCK), zeroed_block(BLOCK), zeroed_block(BLOCK * 2)));
    data[5 * PAGE + 17] = 42;
    let unwatched = zeroed_block(BLOCK);
    let whole = |b: &[u8]| resident_pages(b);
    let (z0, d0, o0, u0) = (whole(&zero), whole(&data), whole(&other), whole(&unwatched));
    assert_eq!(z0, 0, "the first block went back when the second was allocated");
    assert!(d0 >= BLOCK / PAGE - 1, "the last block stays resident until released: {d0} pages");
    let released = zero_pages::release();
    assert!(released >= BLOCK - 3 * PAGE, "released {released} bytes");
    assert_eq!(whole(&zero), 0, "every page of the all-zero block went back");
    assert_eq!(whole(&data), 1, "only the page holding 42 stayed");
    assert_eq!(whole(&other), o0, "a block of another size is not watched");
    assert_eq!(whole(&unwatched), u0, "a block allocated outside watch() is not watched");
    assert!(zero.iter().all(|&b| b == 0) && data.iter().filter(|&&b| b != 0).count() == 1 && data[5 * PAGE + 17] == 42);
    // Written again after being given back: a fresh private page, the write is kept.
    zero[BLOCK / 2] = 7;
    assert_eq!(zero[BLOCK / 2], 7);
    assert_eq!(zero.iter().map(|&b| b as usize).sum::<usize>(), 7);
    data[0] = 1;
    // Released blocks are forgotten: a second release gives back nothing.
    assert_eq!(zero_pages::release(), 0);
    // A block freed inside watch() is forgotten, so release never reads freed memory.
    zero_pages::watch(BLOCK, || drop(zeroed_block(BLOCK)));
    assert_eq!(zero_pages::release(), 0);
}
