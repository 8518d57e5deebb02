//! `cross-region-share`: per run, the share of ingress, egress and all bytes that crossed
//! regions (three series, one point per run with any bytes, at the run's start).

/// The shares of one run, each in [0, 1] (0 when the direction carried no bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shares {
    pub in_share: f64,
    pub out_share: f64,
    pub total_share: f64,
}

fn sum(v: &[u64]) -> u128 {
    v.iter().map(|&x| x as u128).sum()
}

fn ratio(part: u128, whole: u128) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 / whole as f64 }
}

/// The shares of a run, or `None` when it carried no bytes at all.
pub fn shares(in_bytes: &[u64], out_bytes: &[u64], in_cross: &[u64], out_cross: &[u64]) -> Option<Shares> {
    let (i, o, ic, oc) = (sum(in_bytes), sum(out_bytes), sum(in_cross), sum(out_cross));
    if i + o == 0 {
        return None;
    }
    Some(Shares { in_share: ratio(ic, i), out_share: ratio(oc, o), total_share: ratio(ic + oc, i + o) })
}

#[cfg(feature = "guest")]
mod guest {
    use loupe_udf::{Analysis, Context, Description, Output, ResultKind, Series};

    struct CrossRegionShare;

    impl Analysis for CrossRegionShare {
        fn describe() -> Description {
            Description::new("cross-region-share", ResultKind::Series)
                .summary("Share of each run's ingress, egress and total bytes that crossed regions")
        }

        fn run(ctx: &Context) -> Result<Output, String> {
            let mut in_s = Series::new("in_share", "ratio");
            let mut out_s = Series::new("out_share", "ratio");
            let mut total_s = Series::new("total_share", "ratio");
            for run in ctx.runs().open()? {
                let m = &run.metrics;
                if let Some(s) =
                    super::shares(&m.in_bytes, &m.out_bytes, &m.in_cross_region_bytes, &m.out_cross_region_bytes)
                {
                    in_s.push(run.start_ns, s.in_share);
                    out_s.push(run.start_ns, s.out_share);
                    total_s.push(run.start_ns, s.total_share);
                }
            }
            Ok(Output::series([in_s, out_s, total_s]))
        }
    }

    loupe_udf::export_analysis!(CrossRegionShare);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_per_direction_and_total() {
        let s = shares(&[100, 300], &[50, 50], &[10, 90], &[0, 25]).unwrap();
        assert_eq!(s, Shares { in_share: 0.25, out_share: 0.25, total_share: 0.25 });
        let s = shares(&[100], &[300], &[100], &[0]).unwrap();
        assert_eq!(s, Shares { in_share: 1.0, out_share: 0.0, total_share: 0.25 });
    }

    #[test]
    fn a_direction_without_bytes_is_zero_and_an_idle_run_has_no_point() {
        let s = shares(&[0, 0], &[40, 40], &[0, 0], &[20, 0]).unwrap();
        assert_eq!(s, Shares { in_share: 0.0, out_share: 0.25, total_share: 0.25 });
        assert_eq!(shares(&[0; 4], &[0; 4], &[0; 4], &[0; 4]), None);
        assert_eq!(shares(&[], &[], &[], &[]), None);
    }

    #[test]
    fn no_overflow_on_huge_sums() {
        let s = shares(&[u64::MAX, u64::MAX], &[0], &[u64::MAX, 0], &[0]).unwrap();
        assert_eq!(s.in_share, 0.5);
    }
}
