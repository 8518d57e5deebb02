//! pprof export: a profile as the gzipped `profile.proto` that `go tool pprof` reads.

use std::{collections::HashMap, io::Write};

use loupe_store::{Frame, Profile};

/// pprof's `profile.proto` (github.com/google/pprof/proto/profile.proto), the fields Loupe fills.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
    }
}

/// The profile as a gzipped `profile.proto`, as `go tool pprof` reads it. Values per stack:
/// samples, and CPU time (samples × the sampling period).
pub fn pprof(profile: &Profile, period_ns: i64, start_unix_ns: u64, duration_ns: u64) -> Vec<u8> {
    let mut strings: Vec<String> = vec![String::new()];
    let mut string_ids: HashMap<String, i64> = HashMap::new();
    let mut intern = |s: &str| -> i64 {
        if let Some(&id) = string_ids.get(s) {
            return id;
        }
        strings.push(s.to_string());
        string_ids.insert(s.to_string(), strings.len() as i64 - 1);
        strings.len() as i64 - 1
    };
    let samples_t = proto::ValueType { r#type: intern("samples"), unit: intern("count") };
    let cpu_t = proto::ValueType { r#type: intern("cpu"), unit: intern("nanoseconds") };
    let mut locations: HashMap<&Frame, u64> = HashMap::new();
    let mut location = Vec::new();
    let mut function = Vec::new();
    let mut sample = Vec::new();
    for (frames, count) in &profile.stacks {
        let mut ids = Vec::with_capacity(frames.len());
        for f in frames {
            let id = *locations.entry(f).or_insert_with(|| {
                let id = location.len() as u64 + 1;
                let name = if f.kernel { format!("{} [k]", f.function) } else { f.function.clone() };
                function.push(proto::Function {
                    id,
                    name: intern(&name),
                    system_name: intern(&f.function),
                    filename: intern(&f.module),
                });
                location.push(proto::Location { id, line: vec![proto::Line { function_id: id }] });
                id
            });
            ids.push(id);
        }
        sample.push(proto::Sample { location_id: ids, value: vec![*count as i64, *count as i64 * period_ns] });
    }
    let message = proto::Profile {
        sample_type: vec![samples_t, cpu_t.clone()],
        sample,
        location,
        function,
        string_table: strings,
        time_nanos: start_unix_ns as i64,
        duration_nanos: duration_ns as i64,
        period_type: Some(cpu_t),
        period: period_ns,
    };
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&prost::Message::encode_to_vec(&message)).expect("writing to memory");
    gz.finish().expect("writing to memory")
}
