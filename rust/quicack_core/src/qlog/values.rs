//! The values of a qlog event as the lane takes them: type names to codes (`normalize._PACKET_TYPES`,
//! `_FRAME_TYPES`, `event_kind`) and numbers as `normalize._int` / `_num` read them. Anything the Python twin
//! would read differently (a numeric string, a float where an int belongs, a non-ASCII name) is a `HandOff`.

use crate::json::Value;

// Beyond this many ms from 0 an event time is corrupt (reader.MAX_TIME_MS).
pub const MAX_TIME_MS: f64 = 4.6e12;
// Ints above 2**53 in a float column: polars' strict conversion is left to the Python reader.
pub const EXACT_FLOAT_INT: i64 = 1 << 53;

pub const EVENTS: [&str; 2] = ["sent", "received"];
pub const PACKET_TYPES: [&str; 8] =
    ["initial", "handshake", "0rtt", "1rtt", "retry", "version_negotiation", "stateless_reset", "unknown"];
pub const P_INITIAL: u8 = 0;
pub const P_UNKNOWN: u8 = 7;
pub const PN_SPACES: [&str; 3] = ["initial", "handshake", "appdata"];
pub use crate::frame_types::{
    FRAME_NAMES, F_ACK, F_CONNECTION_CLOSE, F_CRYPTO, F_DATAGRAM, F_HANDSHAKE_DONE, F_PADDING, F_STREAM,
    F_UNKNOWN,
};

// normalize._PACKET_TYPES (its keys lowercased)
pub fn packet_type_code(lower: &str) -> u8 {
    match lower {
        "initial" => 0,
        "handshake" => 1,
        "0rtt" | "zerortt" | "zero_rtt" | "0rtt_protected" => 2,
        "1rtt" | "onertt" | "one_rtt" | "1rtt_protected" | "short" | "short_header" => 3,
        "retry" => 4,
        "version_negotiation" => 5,
        "stateless_reset" => 6,
        _ => P_UNKNOWN,
    }
}

// normalize._PN_SPACE
pub fn pn_space_of(packet_type: u8) -> Option<u8> {
    match packet_type {
        0 => Some(0),
        1 => Some(1),
        2 | 3 => Some(2),
        _ => None,
    }
}

// normalize._FRAME_TYPES (frame_types.csv: names and qlog spellings)
pub fn frame_type_code(lower: &str) -> u8 {
    crate::frame_types::qlog_frame_code(lower).unwrap_or(F_UNKNOWN)
}

/// Why the lane hands a record back: it leaves the decision to the Python reader.
pub struct HandOff;

pub type Checked<T> = Result<T, HandOff>;

impl From<crate::json::Fail> for HandOff {
    fn from(_: crate::json::Fail) -> Self {
        HandOff
    }
}

/// The code of a type name (`packet_type_code` / `frame_type_code` of its ASCII lowercase); a non-string is
/// "unknown"; a non-ASCII string goes to Python (its Unicode lowercase may differ).
pub fn type_code(value: Option<Value>, lookup: fn(&str) -> u8, unknown: u8) -> Checked<u8> {
    match value {
        Some(Value::Str(s)) => {
            if !s.is_ascii() {
                return Err(HandOff);
            }
            if s.bytes().any(|b| b.is_ascii_uppercase()) {
                Ok(lookup(&s.to_ascii_lowercase()))
            } else {
                Ok(lookup(s))
            }
        }
        _ => Ok(unknown),
    }
}

/// normalize._int for the values the lane takes: ints, null, and what _int turns into None.
pub fn py_int(value: Option<Value>) -> Checked<Option<i64>> {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(_)) | Some(Value::Array(_)) | Some(Value::Object(_)) => Ok(None),
        Some(Value::Int(i)) => Ok(Some(i)),
        Some(Value::Float(_)) | Some(Value::Str(_)) => Err(HandOff),
    }
}

/// normalize._num likewise.
pub fn py_num(value: Option<Value>) -> Checked<Option<f64>> {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(_)) | Some(Value::Array(_)) | Some(Value::Object(_)) => Ok(None),
        Some(Value::Int(i)) => Ok(Some(i as f64)),
        Some(Value::Float(f)) => Ok(Some(f)),
        Some(Value::Str(_)) => Err(HandOff),
    }
}

/// A value the Python reader puts into an Int64 column as it is: only ints and nulls here.
pub fn raw_int(value: Option<Value>) -> Checked<Option<i64>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Int(i)) => Ok(Some(i)),
        _ => Err(HandOff),
    }
}

pub fn is_none(value: Option<Value>) -> bool {
    matches!(value, None | Some(Value::Null))
}

/// A number kept as the log wrote it (int or float) in a Float64 column: polars converts either the same way,
/// but the Python twin of a row must hold the same type.
#[derive(Clone, Copy)]
pub enum Num {
    I(i64),
    F(f64),
}

impl Num {
    pub fn float(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

/// A raw RTT metric (metrics scale 1.0): number or null.
pub fn raw_num(value: Option<Value>) -> Checked<Option<Num>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Int(i)) if i.abs() <= EXACT_FLOAT_INT => Ok(Some(Num::I(i))),
        Some(Value::Float(f)) => Ok(Some(Num::F(f))),
        _ => Err(HandOff),
    }
}
