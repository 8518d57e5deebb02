//! Interfaces as the sampler needs them: does it exist (in this thread's network namespace),
//! how long is its link-layer header, and who else is sampling it.

use std::{
    ffi::CString,
    fs::{self, File, OpenOptions},
    io::{Read, Seek, Write},
    os::{fd::AsRawFd, unix::fs::MetadataExt},
    path::PathBuf,
};

use crate::SamplerError;

/// A network interface in the calling thread's network namespace.
#[derive(Clone, Debug)]
pub struct Interface {
    pub name: String,
    pub index: u32,
    /// Link-layer header bytes in front of the IP header as tc sees the packet.
    pub l2_len: u32,
}

impl Interface {
    pub fn lookup(name: &str) -> Result<Self, SamplerError> {
        let cname = CString::new(name).map_err(|_| SamplerError::UnknownInterface(name.into()))?;
        // SAFETY: valid NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if index == 0 {
            return Err(SamplerError::UnknownInterface(name.into()));
        }
        // ARPHRD_ETHER and ARPHRD_LOOPBACK carry a 14-byte Ethernet header at tc; raw-IP devices
        // (tun, WireGuard: ARPHRD_NONE) carry none.
        let l2_len = match link_type(name) {
            Some(libc::ARPHRD_ETHER | libc::ARPHRD_LOOPBACK) | None => 14,
            Some(_) => 0,
        };
        Ok(Self { name: name.into(), index, l2_len })
    }
}

/// The ARPHRD link type of an interface, asked through a socket so the answer comes from the
/// calling thread's network namespace (sysfs shows the namespace it was mounted in).
fn link_type(name: &str) -> Option<u16> {
    // SAFETY: plain socket/ioctl/close on a zeroed `ifreq` whose name is NUL-terminated.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes().take(libc::IFNAMSIZ - 1)) {
            *dst = src as libc::c_char;
        }
        let rc = libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut req);
        libc::close(fd);
        (rc == 0).then_some(req.ifr_ifru.ifru_hwaddr.sa_family)
    }
}

/// An exclusive claim on sampling one interface, held for as long as a sampler is attached.
/// It is an advisory `flock`, so a killed process releases it with its file descriptors and the
/// next sampler may clean up the filters it left behind.
#[derive(Debug)]
pub(crate) struct InterfaceLock {
    _file: File,
}

impl InterfaceLock {
    pub(crate) fn acquire(iface: &Interface) -> Result<Self, SamplerError> {
        let dir = PathBuf::from("/run/loupe");
        let denied = |e: std::io::Error, what: String| {
            let lacking = crate::privilege::lacking();
            if e.kind() == std::io::ErrorKind::PermissionDenied && !lacking.is_empty() {
                SamplerError::Privilege { action: "sample an interface", lacking: lacking.join(", ") }
            } else {
                SamplerError::io(what, e)
            }
        };
        fs::create_dir_all(&dir).map_err(|e| denied(e, format!("creating {}", dir.display())))?;
        // Interface names repeat across network namespaces; the namespace's inode tells them apart.
        let netns = fs::metadata("/proc/thread-self/ns/net").map(|m| m.ino()).unwrap_or(0);
        let path = dir.join(format!("tc-{netns}-{}.lock", iface.name));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| denied(e, format!("opening {}", path.display())))?;
        // SAFETY: valid fd owned by `file`.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let holder =
                if holder.is_empty() { "held by another Loupe process".into() } else { format!("held by {holder}") };
            return Err(SamplerError::Busy { iface: iface.name.clone(), holder });
        }
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(file, "pid {}", std::process::id());
        Ok(Self { _file: file })
    }
}
