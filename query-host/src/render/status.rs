//! `loupe status`: an agent's health in a few lines, the features it runs without first.

use loupe_api::model::Health;

pub fn text(h: &Health) -> String {
    let mut out = format!("{} ({} {}, up {} s) on {}\n", h.status, h.mode, h.version, h.uptime_s, h.hostname);
    for off in &h.off {
        out += &format!("off: {}: {}\n", off.feature, off.reason);
    }
    if !h.ifaces.is_empty() {
        out += &format!("runs on: {}\n", h.ifaces.join(", "));
    }
    out += &format!("tokens: {}\n", if h.auth { "checked" } else { "not checked (--no-auth)" });
    if let Some(place) = &h.fleet {
        let trust = h.fleet_trust.as_deref().unwrap_or("none");
        out +=
            &format!("fleet: host {} in rack {}, dc {} (takes requests: {trust})\n", place.host, place.rack, place.dc);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loupe_api::model::FeatureOff;

    #[test]
    fn a_degraded_agent_names_what_is_off_and_why() {
        let h = Health {
            status: "degraded".into(),
            version: "0.1.0".into(),
            mode: "agent".into(),
            hostname: "web-12".into(),
            uptime_s: 7,
            ifaces: vec!["eth0".into()],
            auth: true,
            fleet: None,
            fleet_trust: None,
            off: vec![FeatureOff {
                feature: "off_cpu".into(),
                reason: "this kernel's verifier refused loupe_off_cpu_take: BPF program is too large".into(),
            }],
        };
        let text = text(&h);
        assert!(text.starts_with("degraded (agent 0.1.0, up 7 s) on web-12\n"), "{text}");
        assert!(text.contains("off: off_cpu: this kernel's verifier refused loupe_off_cpu_take"), "{text}");
        assert!(text.contains("runs on: eth0") && text.contains("tokens: checked"), "{text}");
    }
}
