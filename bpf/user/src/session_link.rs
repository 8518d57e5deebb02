//! Uprobe session links, which aya 0.14 cannot make: the session program must be loaded with
//! the expected attach type `BPF_TRACE_UPROBE_SESSION` (aya loads kprobe-type programs without
//! one), and attached with `BPF_LINK_CREATE` naming a file, its offsets and a cookie each.
//!
//! So this module does what aya's loader does for one program, and no more: parse the object
//! (aya-obj), point its map references at the maps aya already created for the same object,
//! link its calls, and issue `BPF_PROG_LOAD` and `BPF_LINK_CREATE` itself. The object is ours and
//! small (no BTF relocations, no global data). Why sessions at all: a call that sampling skips
//! then pays the entry trap alone (measured in `docs/probes.md`).

use std::{
    collections::HashSet,
    ffi::CString,
    os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd},
    path::Path,
};

use aya::{Ebpf, maps::Map};

use crate::SamplerError;

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_PROG_TYPE_KPROBE: u32 = 2;
/// `enum bpf_attach_type` (uapi/linux/bpf.h; this kernel's BTF says 57).
const BPF_TRACE_UPROBE_SESSION: u32 = 57;
/// Verifier log kept for an error message.
const LOG_BYTES: usize = 64 << 10;

/// The `BPF_PROG_LOAD` part of `union bpf_attr` (uapi/linux/bpf.h), fields in the kernel's order.
#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// The `BPF_LINK_CREATE` part of `union bpf_attr` for `uprobe_multi` (and session) links.
#[repr(C)]
#[derive(Default)]
struct UprobeMultiLink {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    path: u64,
    offsets: u64,
    ref_ctr_offsets: u64,
    cookies: u64,
    cnt: u32,
    multi_flags: u32,
    pid: u32,
    _pad: u32,
}

/// # Safety
/// `attr` is the command's attribute struct, fully initialised, and every pointer in it is
/// valid for the call.
unsafe fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> std::io::Result<OwnedFd> {
    // SAFETY: per the contract; the kernel reads at most `size_of::<T>()` bytes.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut T, size_of::<T>()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Loads `program` of `object` as a uprobe session program whose maps are `ebpf`'s (loaded from
/// the same `object`).
/// Also returns the instructions the verifier processed, from its statistics.
pub(crate) fn load_session_program(
    object: &[u8],
    ebpf: &Ebpf,
    program: &str,
) -> Result<(OwnedFd, Option<u32>), SamplerError> {
    let load_err = |what: &str, e: &dyn std::fmt::Display| SamplerError::Load(format!("{program}: {what}: {e}"));
    let mut obj = aya_obj::Object::parse(object).map_err(|e| load_err("parsing the object", &e))?;
    let mut fds = Vec::new();
    for name in obj.maps.keys() {
        let map = ebpf.map(name).ok_or_else(|| SamplerError::Load(format!("map {name} missing")))?;
        let data = match map {
            Map::Array(d) | Map::PerCpuArray(d) | Map::LruHashMap(d) | Map::HashMap(d) | Map::RingBuf(d) => d,
            _ => return Err(SamplerError::Load(format!("map {name}: a kind the session loader does not relocate"))),
        };
        fds.push((name.clone(), data.fd().as_fd().as_raw_fd()));
    }
    let text_sections: HashSet<usize> = obj.functions.keys().map(|(section, _)| *section).collect();
    let maps = obj.maps.clone();
    obj.relocate_maps(fds.iter().map(|(name, fd)| (name.as_str(), *fd, &maps[name])), &text_sections)
        .map_err(|e| load_err("relocating maps", &e))?;
    obj.relocate_calls(&text_sections).map_err(|e| load_err("linking calls", &e))?;
    obj.sanitize_functions(aya::features());
    let key = obj.programs.get(program).ok_or_else(|| load_err("program", &"missing from the object"))?.function_key();
    let function = obj.functions.get(&key).ok_or_else(|| load_err("function", &"missing from the object"))?;
    let license = CString::new(obj.license.to_bytes()).map_err(|e| load_err("license", &e))?;
    let mut log = vec![0u8; LOG_BYTES];
    let mut name = [0u8; 16];
    for (dst, src) in name.iter_mut().zip(program.bytes().take(15)) {
        *dst = src;
    }
    let mut attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_KPROBE,
        insn_cnt: function.instructions.len() as u32,
        insns: function.instructions.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: crate::verifier::LOG_LEVEL.bits(),
        log_size: LOG_BYTES as u32,
        log_buf: log.as_mut_ptr() as u64,
        prog_name: name,
        expected_attach_type: BPF_TRACE_UPROBE_SESSION,
        ..Default::default()
    };
    // SAFETY: `attr` is initialised; the instructions, license and log outlive the call.
    let loaded = unsafe { bpf(BPF_PROG_LOAD, &mut attr) };
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let log = String::from_utf8_lossy(&log[..end]);
    match loaded {
        Ok(fd) => Ok((fd, crate::verifier::processed_insns(&log))),
        Err(e) => {
            let program = format!("{program} (as a uprobe session program)");
            Err(crate::verifier::refused_or_privilege(&program, &e, &log))
        }
    }
}

/// One session link per file and process: every function of that file at its offset, its
/// index as the cookie. `pid` 0: every process that maps the file.
pub(crate) fn attach_session(
    program: &OwnedFd,
    file: &Path,
    pid: u32,
    offsets: &[u64],
    cookies: &[u64],
) -> std::io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let path = CString::new(file.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "path with a NUL byte"))?;
    let mut attr = UprobeMultiLink {
        prog_fd: program.as_raw_fd() as u32,
        attach_type: BPF_TRACE_UPROBE_SESSION,
        path: path.as_ptr() as u64,
        offsets: offsets.as_ptr() as u64,
        cookies: cookies.as_ptr() as u64,
        cnt: offsets.len() as u32,
        pid,
        ..Default::default()
    };
    // SAFETY: `attr` is initialised; path, offsets and cookies outlive the call and hold `cnt`
    // entries each.
    unsafe { bpf(BPF_LINK_CREATE, &mut attr) }
}
