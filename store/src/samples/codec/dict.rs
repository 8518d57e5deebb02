//! Dictionary entries (`d` records): frames, comms, stacks (as frame ids), threads, and each
//! process's stack vocabulary. The dictionary itself and its cache are the samples module's
//! `dict`; this file only turns its entries into bytes and back.

use serde::{Deserialize, Serialize};

use crate::encoding::msgpack::{from_msgpack, to_msgpack};
use crate::samples::model::{Frame, FrameKind, ObjectAddress};

#[derive(Serialize)]
struct FrameRow<'a>(&'a str, &'a str, bool);
#[derive(Serialize)]
struct LocatedFrameRow<'a>(&'a str, &'a str, bool, &'a ObjectAddress);
#[derive(Serialize)]
struct KindFrameRow<'a>(&'a str, &'a str, bool, Option<&'a ObjectAddress>, u8);

/// A frame is `[function, module, kernel]`, or `[function, module, kernel, [build_id,
/// address]]` when it carries its location in a file (frames stored before locations existed
/// are the former, and still read), or `[function, module, kernel, location or nil, kind]` when
/// its kind is not the one the other fields imply ([`FrameKind::implied`]: a Python frame).
/// A build ID longer than [`ObjectAddress::MAX_BUILD_ID`] is refused by its decoder.
pub fn encode_frame(f: &Frame) -> Vec<u8> {
    if f.kind != FrameKind::implied(f.kernel, &f.module) {
        return to_msgpack(&KindFrameRow(&f.function, &f.module, f.kernel, f.location.as_ref(), f.kind.code()));
    }
    match &f.location {
        None => to_msgpack(&FrameRow(&f.function, &f.module, f.kernel)),
        Some(l) => to_msgpack(&LocatedFrameRow(&f.function, &f.module, f.kernel, l)),
    }
}

pub fn decode_frame(bytes: &[u8]) -> Result<Frame, String> {
    // The array's length says which form it is.
    match bytes.first() {
        Some(0x93) => {
            let (function, module, kernel): (String, String, bool) = from_msgpack(bytes)?;
            let kind = FrameKind::implied(kernel, &module);
            Ok(Frame { function: function.into(), module: module.into(), kernel, location: None, kind })
        }
        Some(0x94) => {
            let (function, module, kernel, location): (String, String, bool, ObjectAddress) = from_msgpack(bytes)?;
            let kind = FrameKind::implied(kernel, &module);
            Ok(Frame { function: function.into(), module: module.into(), kernel, location: Some(location), kind })
        }
        Some(0x95) => {
            let (function, module, kernel, location, kind): (String, String, bool, Option<ObjectAddress>, u8) =
                from_msgpack(bytes)?;
            let kind = FrameKind::from_code(kind).ok_or_else(|| format!("a frame of unknown kind {kind}"))?;
            Ok(Frame { function: function.into(), module: module.into(), kernel, location, kind })
        }
        _ => Err("a frame is an array of 3, 4 or 5 fields".into()),
    }
}

pub fn encode_comm(c: &str) -> Vec<u8> {
    to_msgpack(&c)
}

pub fn decode_comm(bytes: &[u8]) -> Result<String, String> {
    from_msgpack(bytes)
}

/// A thread as the dictionary stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ThreadRec {
    pub pid: u32,
    pub tid: u32,
    /// Comm dictionary id.
    pub comm: u32,
    pub cgroup: u64,
}

pub fn encode_thread(t: &ThreadRec) -> Vec<u8> {
    to_msgpack(t)
}

pub fn decode_thread(bytes: &[u8]) -> Result<ThreadRec, String> {
    from_msgpack(bytes)
}

/// One decoded `d` record: the kind and id from its key, the entry from its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DictRecord {
    Frame(u32, Frame),
    Comm(u32, String),
    Stack(u32, Vec<u32>),
    Thread(u32, ThreadRec),
    /// `(pid, local, stack)`: the `local`-th stack of the process's vocabulary.
    Vocab(u32, u32, u32),
}

/// Decodes a dictionary record, key and value: what loading the dictionary cache and
/// `verify` read.
pub fn decode_dict_record(key: &[u8], value: &[u8]) -> Result<DictRecord, String> {
    if let Some((pid, local)) = crate::keys::parse_vocab_key(key) {
        return from_msgpack::<u32>(value)
            .map(|stack| DictRecord::Vocab(pid, local, stack))
            .map_err(|d| format!("vocabulary entry {pid}/{local}: {d}"));
    }
    let (kind, id) = crate::keys::parse_dict_key(key).ok_or_else(|| format!("dictionary key {key:?}"))?;
    let what = |d: String| format!("dictionary entry {}/{id}: {d}", kind.escape_ascii());
    match kind {
        crate::keys::DICT_FRAME => decode_frame(value).map(|f| DictRecord::Frame(id, f)),
        crate::keys::DICT_COMM => decode_comm(value).map(|c| DictRecord::Comm(id, c)),
        crate::keys::DICT_STACK => decode_stack(value).map(|s| DictRecord::Stack(id, s)),
        crate::keys::DICT_THREAD => decode_thread(value).map(|t| DictRecord::Thread(id, t)),
        _ => Err("unknown kind".into()),
    }
    .map_err(what)
}

/// A vocabulary entry's value: the stack id.
pub fn encode_vocab(stack: u32) -> Vec<u8> {
    to_msgpack(&stack)
}

pub fn encode_stack(frames: &[u32]) -> Vec<u8> {
    to_msgpack(&frames)
}

pub fn decode_stack(bytes: &[u8]) -> Result<Vec<u32>, String> {
    from_msgpack(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_records_roundtrip() {
        let f = Frame::user("ƒoo::bär<Ω>", "libß.so");
        assert_eq!(decode_frame(&encode_frame(&f)).unwrap(), f);
        let k = Frame::kernel("do_idle");
        assert_eq!(decode_frame(&encode_frame(&k)).unwrap(), k);
        let u = Frame::unnamed("libc.so.6", ObjectAddress { build_id: vec![0x93, 0xac, 0x61], address: 0x1750ce });
        assert_eq!(&*u.function, "libc.so.6+0x1750ce");
        assert!(u.is_unnamed() && !f.is_unnamed());
        assert_eq!(decode_frame(&encode_frame(&u)).unwrap(), u);
        let named = u.named("__strpbrk_sse42");
        assert!(!named.is_unnamed());
        assert_eq!(decode_frame(&encode_frame(&named)).unwrap(), named);
        // Frames stored before locations existed: a 3-array, still read.
        let old = rmp_serde::to_vec(&("memcpy", "libc.so.6", false)).unwrap();
        assert_eq!(decode_frame(&old).unwrap(), Frame::user("memcpy", "libc.so.6"));
        // A build ID longer than any hash is refused, not kept.
        let long = rmp_serde::to_vec(&("f", "m", false, (vec![7u8; 65], 1u64))).unwrap();
        assert!(decode_frame(&long).unwrap_err().contains("build ID"));
        assert!(decode_frame(&rmp_serde::to_vec(&("f", "m")).unwrap()).is_err());
        // A Python frame keeps its kind (a 5-array); a JIT frame's is implied by its module.
        let py = Frame::python("Handler.get", "/srv/app/handler.py");
        assert_eq!(encode_frame(&py)[0], 0x95);
        assert_eq!(decode_frame(&encode_frame(&py)).unwrap(), py);
        let jit = Frame::user("LazyCompile:f", "[jit]");
        assert_eq!((jit.kind, encode_frame(&jit)[0]), (FrameKind::Jit, 0x93));
        assert_eq!(decode_frame(&encode_frame(&jit)).unwrap(), jit);
        assert_eq!(decode_frame(&encode_frame(&k)).unwrap().kind, FrameKind::Kernel);
        let unknown = rmp_serde::to_vec(&("f", "m", false, None::<ObjectAddress>, 9u8)).unwrap();
        assert!(decode_frame(&unknown).unwrap_err().contains("unknown kind 9"));
        assert_eq!(decode_comm(&encode_comm("swapper/0")).unwrap(), "swapper/0");
        assert_eq!(decode_stack(&encode_stack(&[1, 2, u32::MAX])).unwrap(), vec![1, 2, u32::MAX]);
        assert_eq!(decode_stack(&encode_stack(&[])).unwrap(), Vec::<u32>::new());
        let t = ThreadRec { pid: u32::MAX, tid: 0, comm: 7, cgroup: u64::MAX };
        assert_eq!(decode_thread(&encode_thread(&t)).unwrap(), t);
    }
}
