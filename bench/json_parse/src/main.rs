//! The qlog lane's JSON parser (src/json.rs) against maintained crates, on real qlog records: each parser reads
//! every record of a JSON-SEQ file and the fields the lane reads (name, time, data; the packet header's type and
//! number; each frame's type and length), so a parser that defers work (a lazy or tape API) pays for the fields
//! as the lane would. Rounds alternate the parsers; best and median CPU time of each are printed.
//!
//!     cargo run --release --manifest-path bench/json_parse/Cargo.toml -- FILE.sqlog [ROUNDS]
//!
//! FILE: e.g. the 100 MB input bench/qlog_throughput.py builds ($TMPDIR/quicack_qlog_bench/qlog_100MB.sqlog).

use std::time::Instant;

use quicack_core::json::{Tape, Value};

fn records(data: &[u8]) -> Vec<&[u8]> {
    data.split(|b| *b == 0x1e).filter(|r| r.iter().any(|b| !b.is_ascii_whitespace())).collect()
}

/// The lane's parser; a checksum of what was read.
fn ours(records: &[&[u8]]) -> u64 {
    let mut tape = Tape::default();
    let mut sum = 0u64;
    for record in records {
        let Ok(doc) = tape.parse(record, 64) else { continue };
        let Some(event) = doc.root().as_object() else { continue };
        let [name, time, data] = event.fields(|k| match k {
            "name" => Some(0),
            "time" => Some(1),
            "data" => Some(2),
            _ => None,
        });
        if let Some(Value::Str(s)) = name {
            sum += s.len() as u64;
        }
        if let Some(Value::Float(t)) = time {
            sum += t as u64;
        } else if let Some(Value::Int(t)) = time {
            sum += t as u64;
        }
        let Some(data) = data.and_then(Value::as_object) else { continue };
        let [header, frames] = data.fields(|k| match k {
            "header" => Some(0),
            "frames" => Some(1),
            _ => None,
        });
        if let Some(header) = header.and_then(Value::as_object) {
            if let Some(Value::Str(s)) = header.get("packet_type") {
                sum += s.len() as u64;
            }
            if let Some(Value::Int(n)) = header.get("packet_number") {
                sum += n as u64;
            }
        }
        if let Some(Value::Array(frames)) = frames {
            for frame in frames.iter().filter_map(Value::as_object) {
                let [ft, length] = frame.fields(|k| match k {
                    "frame_type" => Some(0),
                    "length" => Some(1),
                    _ => None,
                });
                if let Some(Value::Str(s)) = ft {
                    sum += s.len() as u64;
                }
                if let Some(Value::Int(n)) = length {
                    sum += n as u64;
                }
            }
        }
    }
    sum
}

fn serde(records: &[&[u8]]) -> u64 {
    use serde_json::Value;
    let mut sum = 0u64;
    for record in records {
        let Ok(Value::Object(event)) = serde_json::from_slice::<Value>(record) else { continue };
        if let Some(Value::String(s)) = event.get("name") {
            sum += s.len() as u64;
        }
        if let Some(Value::Number(t)) = event.get("time") {
            sum += t.as_f64().unwrap_or(0.0) as u64;
        }
        let Some(Value::Object(data)) = event.get("data") else { continue };
        if let Some(Value::Object(header)) = data.get("header") {
            if let Some(Value::String(s)) = header.get("packet_type") {
                sum += s.len() as u64;
            }
            if let Some(n) = header.get("packet_number").and_then(Value::as_i64) {
                sum += n as u64;
            }
        }
        if let Some(Value::Array(frames)) = data.get("frames") {
            for frame in frames {
                if let Some(Value::String(s)) = frame.get("frame_type") {
                    sum += s.len() as u64;
                }
                if let Some(n) = frame.get("length").and_then(Value::as_i64) {
                    sum += n as u64;
                }
            }
        }
    }
    sum
}

fn simd(records: &[&[u8]]) -> u64 {
    use simd_json::prelude::*;
    let mut sum = 0u64;
    let mut copy = Vec::new();
    let mut buffers = simd_json::Buffers::default();
    for record in records {
        copy.clear();
        copy.extend_from_slice(record); // simd-json unescapes in place: the record must stay as it was
        let Ok(event) = simd_json::to_borrowed_value_with_buffers(&mut copy, &mut buffers) else { continue };
        if let Some(s) = event.get_str("name") {
            sum += s.len() as u64;
        }
        if let Some(t) = event.get("time").and_then(|t| t.cast_f64()) {
            sum += t as u64;
        }
        let Some(data) = event.get("data") else { continue };
        if let Some(header) = data.get("header") {
            if let Some(s) = header.get_str("packet_type") {
                sum += s.len() as u64;
            }
            if let Some(n) = header.get_i64("packet_number") {
                sum += n as u64;
            }
        }
        if let Some(frames) = data.get_array("frames") {
            for frame in frames {
                if let Some(s) = frame.get_str("frame_type") {
                    sum += s.len() as u64;
                }
                if let Some(n) = frame.get_i64("length") {
                    sum += n as u64;
                }
            }
        }
    }
    sum
}

fn sonic(records: &[&[u8]]) -> u64 {
    use sonic_rs::{JsonContainerTrait, JsonValueTrait};
    let mut sum = 0u64;
    for record in records {
        let Ok(event) = sonic_rs::from_slice::<sonic_rs::Value>(record) else { continue };
        if let Some(s) = event.get("name").and_then(|v| v.as_str()) {
            sum += s.len() as u64;
        }
        if let Some(t) = event.get("time").and_then(|v| v.as_f64()) {
            sum += t as u64;
        }
        let Some(data) = event.get("data") else { continue };
        if let Some(header) = data.get("header") {
            if let Some(s) = header.get("packet_type").and_then(|v| v.as_str()) {
                sum += s.len() as u64;
            }
            if let Some(n) = header.get("packet_number").and_then(|v| v.as_i64()) {
                sum += n as u64;
            }
        }
        if let Some(frames) = data.get("frames").and_then(|v| v.as_array()) {
            for frame in frames.iter() {
                if let Some(s) = frame.get("frame_type").and_then(|v| v.as_str()) {
                    sum += s.len() as u64;
                }
                if let Some(n) = frame.get("length").and_then(|v| v.as_i64()) {
                    sum += n as u64;
                }
            }
        }
    }
    sum
}

fn cpu_seconds() -> f64 {
    // CPU time of this process (the machine is shared: wall time would count other jobs)
    let mut usage = std::mem::MaybeUninit::<Rusage>::uninit();
    // SAFETY: getrusage(RUSAGE_SELF) fills the struct (Linux x86_64 layout).
    unsafe { getrusage(0, usage.as_mut_ptr()) };
    let usage = unsafe { usage.assume_init() };
    let seconds = |t: Timeval| t.sec as f64 + t.usec as f64 / 1e6;
    seconds(usage.utime) + seconds(usage.stime)
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Timeval {
    sec: i64,
    usec: i64,
}

#[repr(C)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    rest: [i64; 14],
}

extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: json_parse FILE.sqlog [ROUNDS]");
    let rounds: usize = args.get(2).map_or(5, |r| r.parse().expect("a number of rounds"));
    let data = std::fs::read(path).expect("readable");
    let records = records(&data);
    println!("{path}: {} MB, {} records, {rounds} rounds", data.len() / 1_000_000, records.len());
    type Parser = fn(&[&[u8]]) -> u64;
    let parsers: [(&str, Parser); 4] =
        [("json.rs (ours)", ours), ("serde_json", serde), ("simd-json", simd), ("sonic-rs", sonic)];
    let mut times = vec![Vec::new(); parsers.len()];
    let mut sums = vec![0; parsers.len()];
    for _ in 0..rounds {
        for (i, (_, parse)) in parsers.iter().enumerate() {
            let (cpu, wall) = (cpu_seconds(), Instant::now());
            sums[i] = parse(&records);
            times[i].push((cpu_seconds() - cpu, wall.elapsed().as_secs_f64()));
        }
    }
    let ours_best = times[0].iter().map(|t| t.0).fold(f64::INFINITY, f64::min);
    let mut ours_sorted: Vec<f64> = times[0].iter().map(|t| t.0).collect();
    ours_sorted.sort_by(f64::total_cmp);
    let ours_median = ours_sorted[ours_sorted.len() / 2];
    println!("| parser | CPU s best | CPU s median | MB/s (best) | time / ours (best, median) | checksum |");
    println!("|---|---|---|---|---|---|");
    for (i, (name, _)) in parsers.iter().enumerate() {
        let mut cpu: Vec<f64> = times[i].iter().map(|t| t.0).collect();
        cpu.sort_by(f64::total_cmp);
        let (best, median) = (cpu[0], cpu[cpu.len() / 2]);
        println!(
            "| {name} | {best:.3} | {median:.3} | {:.0} | {:.2} / {:.2} | {} |",
            data.len() as f64 / 1e6 / best,
            best / ours_best,
            median / ours_median,
            sums[i]
        );
    }
}
