//! `sample-count`: streams every sample of the range (idle ones too) and answers their count as
//! TEXT — a measure of the sample cursor's throughput. Each sample's fields are folded into a
//! checksum so the reading isn't optimized away; the answer is only the count.

use loupe_udf::{Analysis, Context, Description, Output, ResultKind};

struct SampleCount;

impl Analysis for SampleCount {
    fn describe() -> Description {
        Description::new("sample-count", ResultKind::Text)
            .summary("Counts every stack sample of a range (cursor throughput)")
    }

    fn run(ctx: &Context) -> Result<Output, String> {
        let mut n = 0u64;
        let mut check = 0u64;
        for s in ctx.samples().include_idle(true).open()? {
            n += 1;
            check ^= s.time_ns
                ^ u64::from(s.stack)
                ^ (u64::from(s.cpu) << 32)
                ^ u64::from(s.pid)
                ^ (u64::from(s.tid) << 16)
                ^ (u64::from(s.comm) << 40)
                ^ u64::from(s.idle);
        }
        std::hint::black_box(check);
        Ok(Output::text(n.to_string()))
    }
}

loupe_udf::export_analysis!(SampleCount);
