//! Encoding of sample records: batch tables, per-CPU blocks, batch records, hour rollups, batch
//! metadata, dictionary entries.
//!
//! Every value is MessagePack (rmp-serde, structs as arrays); the integer columns of blocks
//! and tables are packed by `crate::encoding::bits` into one `bin` field. See [`super`] for why
//! the data is split this way; this module only turns rows into bytes and back, and checks
//! everything on the way back (it never panics on a corrupt record).
//!
//! One file per record kind, each describing its format:
//!
//! | file | record |
//! |---|---|
//! | `table` | the batch table (`h`): a batch's distinct `(thread, idle, stack)` entries and their counts, in partitions by first CPU |
//! | `block` | one CPU's samples of a batch (`b`, and each block of a batch record): times on a timer grid, entries as first uses and repeats; the codes a batch's blocks share |
//! | `batch_record` | the `h` record with its blocks: table, directory, payloads, shared codes |
//! | `rollup` | the hour rollup (`H`): an hour's tables summed into one |
//! | `batch_meta` | batch metadata (`B`) |
//! | `dict` | dictionary entries (`d`): frames, comms, stacks, threads, vocabularies |
//!
//! They build on each other in one direction: `table` names no other, `block` and `rollup` use
//! `table`, `batch_record` uses `table` and `block`. Everything public is re-exported here, so
//! the rest of the store (and `fuzz/`) names it `samples::codec::X`.

mod batch_meta;
mod batch_record;
mod block;
mod dict;
mod rollup;
mod table;
#[cfg(test)]
mod testing;

pub use batch_meta::{BatchRow, decode_batch, encode_batch};
pub use batch_record::{BlockAt, BlockDir, RecordPerCpu, decode_block_dir, encode_batch_record, split_batch_record};
pub use block::{Block, BlockPayload, SharedCodes, decode_block, encode_block, encode_block_payload};
pub use dict::{
    DictRecord, ThreadRec, decode_comm, decode_dict_record, decode_frame, decode_stack, decode_thread, encode_comm,
    encode_frame, encode_stack, encode_thread, encode_vocab,
};
pub use rollup::{RollupRow, decode_rollup, decode_rollup_row, encode_rollup, single_partition};
pub use table::{Entry, NoVocabulary, Part, Table, Vocabulary, decode_table, encode_table, table_threads};
