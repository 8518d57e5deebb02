//! Giving back the memory a library fills with zeros at start-up and never touches again.
//!
//! Why: sled 0.34 builds its metrics (`sled::metrics::M`) at the first `open` of the process,
//! whether or not metrics are compiled in: 40 histograms of 65,536 `AtomicUsize` each, every
//! one written with zeros. With sled's default `no_metrics` feature (ours) nothing reads or
//! writes them again, yet those 20 MiB were resident: 21 of the idle agent's 50 MiB
//! (heaptrack, and `/proc/PID/smaps` of `loupe agent --frequency 10`). The crate has no
//! release since 2021 that could change it.
//!
//! How: the `loupe` binary's global allocator ([`Allocator`], the system allocator underneath)
//! notes every block of one given size allocated *on the thread* that runs [`watch`]'s
//! closure, and forgets a block when it is freed. [`release`] then looks at every whole page of
//! the blocks still alive and hands the pages that hold only zeros back to the kernel
//! (`madvise(MADV_DONTNEED)`). It runs as each new block of the size is noted too, on the
//! blocks noted before it: a library builds such blocks one after another, so by the next
//! allocation the previous one is filled, and the 40 histograms are never resident together
//! (released only at the end, they were: ~20 MiB resident at once while the store opened).
//! For private anonymous memory that is exact: the next read of such a page gets a fresh zero
//! page, the next write a fresh private page, so no value changes. What could lose data is
//! another thread writing to (or freeing) a block between the zero check and the `madvise`:
//! so only blocks of the exact size asked for are noted (sled's histograms: no other block
//! sled allocates at open has their size), only those allocated during the closure on the
//! watching thread, and for sled's histograms there is no writer at all and they live as long
//! as the process.
//!
//! Outside the `loupe` binary (tests, benches, other users of the library) the allocator is
//! the system's, nothing is noted, and [`release`] gives back nothing.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    cell::Cell,
    sync::atomic::{AtomicUsize, Ordering},
};

/// Blocks smaller than this are never noted: they would rarely hold a whole page.
pub const MIN_BLOCK: usize = 64 << 10;
/// Most blocks noted at once (sled's metrics are 40); later ones are not noted.
const SLOTS: usize = 128;
const PAGE: usize = 4096;

/// Noted blocks: address (0 = free slot) and length.
static ADDRS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static LENS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

thread_local! {
    /// The block size noted while this thread runs [`watch`]'s closure (0: none). `const` and
    /// without a destructor, so reading it from inside the allocator never allocates.
    static WATCHING: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, noting large blocks allocated inside [`watch`].
pub struct Allocator;

// SAFETY: every call is passed to `System` unchanged; the bookkeeping around it only reads a
// thread-local flag and updates atomics, and never allocates.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        note(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        note(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        forget(p, layout.size());
        // SAFETY: `p` came from `System` with this layout (every allocation goes through it).
        unsafe { System.dealloc(p, layout) }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A block that moves or changes size is no longer the one noted.
        forget(p, layout.size());
        // SAFETY: as for `dealloc`; the caller guarantees `new_size` is valid for `layout`.
        unsafe { System.realloc(p, layout, new_size) }
    }
}

fn note(p: *mut u8, len: usize) {
    if p.is_null() || len < MIN_BLOCK || WATCHING.with(Cell::get) != len {
        return;
    }
    // The blocks noted before are filled by now (module docs). `release` neither allocates nor
    // frees, so it may run inside the allocator.
    release();
    for (addr, slot_len) in ADDRS.iter().zip(&LENS) {
        if addr.compare_exchange(0, p as usize, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            slot_len.store(len, Ordering::Release);
            return;
        }
    }
}

fn forget(p: *mut u8, len: usize) {
    if len < MIN_BLOCK {
        return;
    }
    for addr in &ADDRS {
        if addr.compare_exchange(p as usize, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            return;
        }
    }
}

/// Runs `f`, noting the blocks of exactly `block` bytes (at least [`MIN_BLOCK`]) it allocates
/// on this thread (see the module docs).
pub fn watch<R>(block: usize, f: impl FnOnce() -> R) -> R {
    struct Unset;
    impl Drop for Unset {
        fn drop(&mut self) {
            WATCHING.with(|w| w.set(0));
        }
    }
    WATCHING.with(|w| w.set(block.max(MIN_BLOCK)));
    let _unset = Unset;
    f()
}

/// Gives back to the kernel every whole page of the noted blocks that holds only zeros, and
/// forgets the blocks. Returns the bytes given back.
pub fn release() -> usize {
    let mut released = 0;
    for (addr, slot_len) in ADDRS.iter().zip(&LENS) {
        let start = addr.load(Ordering::Acquire);
        if start == 0 {
            continue;
        }
        let len = slot_len.load(Ordering::Acquire);
        let end = (start + len) / PAGE * PAGE;
        let mut page = start.next_multiple_of(PAGE);
        while page < end {
            // A run of zero pages, given back in one call.
            let run = page;
            while page < end && zero_page(page) {
                page += PAGE;
            }
            if page > run {
                // SAFETY: `run..page` is private anonymous memory of a live block holding only
                // zeros; after MADV_DONTNEED it reads as zeros again, so no value changes. No
                // thread writes to the watched blocks (module docs).
                if unsafe { libc::madvise(run as *mut libc::c_void, page - run, libc::MADV_DONTNEED) } == 0 {
                    released += page - run;
                }
            } else {
                page += PAGE;
            }
        }
        addr.store(0, Ordering::Release);
    }
    released
}

fn zero_page(page: usize) -> bool {
    // SAFETY: `page..page + PAGE` lies inside a live block (noted at allocation and still in the
    // table, so not freed: `forget` runs before any free), memory this process owns.
    let bytes = unsafe { std::slice::from_raw_parts(page as *const u8, PAGE) };
    bytes.iter().all(|&b| b == 0)
}
