//! The common events of one connection as `normalize.TraceConnection` handles them: event names, type names
//! and their aliases, ACK ranges and delays in each unit, metrics, and the rows and state an applied event
//! leaves. Event texts in the form quic-go and ngtcp2 write them (qlog draft-02 / main schema).

use pyo3::Python;

use super::*;
use crate::json::Tape;

fn conn(vantage: &str, ack_delay: u8) -> Conn {
    pyo3::prepare_freethreaded_python();
    Python::with_gil(|py| Conn::new(py.None(), Some(vantage), 1.0, 1.0, ack_delay, false, false, false))
}

/// Plans `data` (an event's "data" object) as an event `name` of `conn`, applies it at time `t`.
fn apply(conn: &mut Conn, name: &str, t: f64, data: &str) -> bool {
    let mut tape = Tape::default();
    let doc = tape.parse(data.as_bytes(), 64).ok().expect("valid JSON");
    let Ok(plan) = conn.plan(event_kind(name), doc.root().as_object().expect("an object")) else { return false };
    conn.apply(t, plan);
    true
}

#[test]
fn event_names_are_matched_without_category_and_case() {
    assert_eq!(event_kind("transport:packet_sent"), KIND_PACKET_SENT);
    assert_eq!(event_kind("packet_received"), KIND_PACKET_RECEIVED);
    assert_eq!(event_kind("RECOVERY:METRICS_UPDATED"), KIND_METRICS);
    assert_eq!(event_kind("recovery:metric_update"), KIND_METRICS);
    assert_eq!(event_kind("transport:parameters_set"), KIND_PARAMETERS);
    assert_eq!(event_kind("transport:datagrams_received"), KIND_DATAGRAM_RX);
    assert_eq!(event_kind("quicack:ack_sent"), KIND_ACK_SENT);
    assert_eq!(event_kind("other:ack_sent"), KIND_OTHER);
    assert_eq!(event_kind("transport:connection_started"), KIND_OTHER);
}

#[test]
fn type_names_and_their_aliases() {
    let code = |text: &str, lookup: fn(&str) -> u8| {
        let mut tape = Tape::default();
        let doc = tape.parse(text.as_bytes(), 4).ok().unwrap();
        type_code(Some(doc.root()), lookup, 99).ok()
    };
    assert_eq!(code(r#""1RTT""#, packet_type_code), Some(3));
    assert_eq!(code(r#""zero_rtt""#, packet_type_code), Some(2));
    assert_eq!(code(r#""ack_ecn""#, frame_type_code), Some(F_ACK));
    assert_eq!(code(r#""Stream""#, frame_type_code), Some(F_STREAM));
    assert_eq!(code(r#""application_close""#, frame_type_code), Some(F_CONNECTION_CLOSE));
    assert_eq!(code(r#""no_such_frame""#, frame_type_code), Some(F_UNKNOWN));
    assert_eq!(code("7", frame_type_code), Some(99)); // not a string: unknown
    assert_eq!(code(r#""ACK\u0130""#, frame_type_code), None); // non-ASCII: Python's lowercase decides
}

#[test]
fn numbers_are_read_as_normalize_reads_them() {
    let mut tape = Tape::default();
    let doc = tape.parse(br#"[5, 2.5, "5", true, null]"#, 4).ok().unwrap();
    let Value::Array(items) = doc.root() else { panic!() };
    let v: Vec<Value> = items.iter().collect();
    assert!(matches!(py_int(Some(v[0])), Ok(Some(5))));
    assert!(py_int(Some(v[1])).is_err() && py_int(Some(v[2])).is_err()); // Python decides
    assert!(matches!(py_int(Some(v[3])), Ok(None)) && matches!(py_int(Some(v[4])), Ok(None)));
    assert!(matches!(py_num(Some(v[0])), Ok(Some(f)) if f == 5.0));
    assert!(raw_int(Some(v[3])).is_err()); // a bool in an Int64 column: the Python rows decide
    assert!(matches!(raw_num(Some(v[0])), Ok(Some(Num::I(5)))) && matches!(raw_num(Some(v[1])), Ok(Some(Num::F(_)))));
}

#[test]
fn a_sent_packet_becomes_a_packet_row_and_frame_rows() {
    let mut c = conn("client", ACK_DELAY_MS);
    let data = r#"{"header": {"packet_type": "initial", "packet_number": 0}, "raw": {"length": 1252},
        "frames": [{"frame_type": "crypto", "offset": 0, "length": 287}, {"frame_type": "padding", "length": 935},
                   "not a frame", {"frame_type": "ping"}]}"#;
    assert!(apply(&mut c, "transport:packet_sent", 10.5, data));
    let p = &c.rows.packets;
    assert_eq!((p.event.clone(), p.packet_type.clone(), p.pn_space.clone()), (vec![0], vec![0], vec![Some(0)]));
    assert_eq!((p.packet_number[0], p.packet_bytes[0], p.aead_tag_bytes[0]), (Some(0), Some(1252), Some(16)));
    assert_eq!((p.ack_eliciting[0], p.frames_logged[0]), (Some(true), true));
    let f = &c.rows.frames;
    assert_eq!(f.frame_index, [0, 1, 3]); // the string in the list keeps its index
    assert_eq!(f.frame_type, [F_CRYPTO, F_PADDING, 1]);
    assert_eq!((f.length[0], f.offset[0], f.frame_bytes[1]), (Some(287), Some(0), Some(935)));
    assert_eq!(c.origin_t, Some(10.5)); // the client's first Initial sent
    assert_eq!(c.first_packet_t, Some(10.5));
}

#[test]
fn ack_ranges_are_sorted_highest_first_and_written_as_text() {
    let mut c = conn("client", ACK_DELAY_MS);
    let data = r#"{"header": {"packet_type": "1RTT", "packet_number": 9},
        "frames": [{"frame_type": "ack", "ack_delay": 0.25, "acked_ranges": [[1, 3], [7], [6, 5]]}]}"#;
    assert!(apply(&mut c, "transport:packet_received", 20.0, data));
    let f = &c.rows.frames;
    assert_eq!(f.ack_ranges[0].as_ref().map(AckRanges::text).as_deref(), Some("[[7,7],[5,6],[1,3]]"));
    assert_eq!((f.largest_acked[0], f.first_ack_range[0], f.ack_delay_ms[0]), (Some(7), Some(0), Some(0.25)));
    assert_eq!(c.rows.packets.ack_eliciting[0], Some(false)); // an ACK alone
}

#[test]
fn ack_delays_in_each_unit() {
    let ack = r#"{"header": {"packet_type": "1RTT"}, "frames": [{"frame_type": "ack", "ack_delay": 100}]}"#;
    let delay = |c: &mut Conn, name: &str| {
        assert!(apply(c, name, 1.0, ack));
        *c.rows.frames.ack_delay_ms.last().unwrap()
    };
    let mut us = conn("client", ACK_DELAY_US);
    assert_eq!(delay(&mut us, "packet_sent"), Some(0.1));
    // "encoded": ack_delay << exponent µs, the sender's exponent from its transport parameters (default 3)
    let mut encoded = conn("client", ACK_DELAY_ENCODED);
    assert_eq!(delay(&mut encoded, "packet_received"), Some(0.8));
    assert!(apply(&mut encoded, "transport:parameters_set", 1.0, r#"{"owner": "remote", "ack_delay_exponent": 10}"#));
    assert_eq!(delay(&mut encoded, "packet_received"), Some(102.4));
    assert_eq!(delay(&mut encoded, "packet_sent"), Some(0.8)); // the local exponent is still the default
    assert!(apply(&mut encoded, "transport:parameters_set", 1.0, r#"{"owner": "local", "ack_delay_exponent": 70}"#));
    assert!(!apply(&mut encoded, "packet_sent", 1.0, ack)); // 2^70: Python's big ints decide
}

#[test]
fn neqo_ack_delay_is_the_wire_field_over_1000() {
    // neqo (Firefox 153) logs ack_delay as the undecoded field / 1000: 2.408 with exponent 3 is 19.264 ms on the wire.
    let ack = r#"{"header": {"packet_type": "1RTT"}, "frames": [{"frame_type": "ack", "ack_delay": 2.408}]}"#;
    let mut neqo = conn("client", ACK_DELAY_ENCODED_MS);
    assert!(apply(&mut neqo, "packet_sent", 1.0, ack));
    assert_eq!(*neqo.rows.frames.ack_delay_ms.last().unwrap(), Some(19.264));
}

#[test]
fn handshake_done_sent_by_the_server_confirms_the_handshake() {
    let mut c = conn("server", ACK_DELAY_MS);
    let done = r#"{"header": {"packet_type": "1RTT", "packet_number": 3}, "frames": [{"frame_type": "handshake_done"}]}"#;
    assert!(apply(&mut c, "packet_received", 4.0, done));
    assert_eq!(c.handshake_confirmed_t, None); // received: not the server's own
    assert!(apply(&mut c, "packet_sent", 5.0, done));
    assert_eq!(c.handshake_confirmed_t, Some(5.0));
    assert_eq!(c.rows.packets.ack_eliciting, [Some(true), Some(true)]);
}

#[test]
fn metrics_keep_the_logged_numbers_or_scale_them() {
    let mut c = conn("client", ACK_DELAY_MS);
    assert!(apply(&mut c, "recovery:metrics_updated", 1.0, r#"{"smoothed_rtt": 25, "min_rtt": 12.5, "cwnd": 14720}"#));
    assert!(apply(&mut c, "recovery:metrics_updated", 2.0, r#"{"unrelated": 1}"#)); // no row
    let m = &c.rows.metrics;
    assert_eq!(m.t, [1.0]);
    assert!(matches!(m.smoothed_rtt_ms[0], Some(Num::I(25))) && matches!(m.min_rtt_ms[0], Some(Num::F(v)) if v == 12.5));
    assert_eq!((m.cwnd_bytes[0], m.pto_count[0]), (Some(14720), None));
    let mut us = conn("client", ACK_DELAY_MS);
    us.rtt_to_ms = 0.001;
    assert!(apply(&mut us, "recovery:metrics_updated", 1.0, r#"{"latest_rtt": 25000}"#));
    assert!(matches!(us.rows.metrics.latest_rtt_ms[0], Some(Num::F(v)) if v == 25.0));
}

#[test]
fn an_ack_reason_is_given_to_the_ack_frame_it_names() {
    let mut c = conn("client", ACK_DELAY_MS);
    let reason = r#"{"packet_number_space": "application_data", "packet_number": 4, "reason": "threshold", "acked_packets": 2}"#;
    assert!(apply(&mut c, "quicack:ack_sent", 1.0, reason));
    let ack = r#"{"header": {"packet_type": "1RTT", "packet_number": 4}, "frames": [{"frame_type": "ack", "acked_ranges": [[0, 1]]}]}"#;
    assert!(apply(&mut c, "packet_sent", 1.0, ack));
    let f = &c.rows.frames;
    assert_eq!((f.ack_reason[0].as_deref(), f.ack_eliciting_since_previous_ack[0]), (Some("threshold"), Some(2)));
    assert!(c.ack_reasons.is_empty());
}
