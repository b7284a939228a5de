//! `QlogLane`: the compiled reader of a JSON-SEQ / NDJSON qlog, the twin of `quicack.qlog.reader`'s record loop,
//! `_FileReader._event` and `normalize.TraceConnection`'s handlers for the common events.
//!
//! The Python reader stays the authority. It feeds the (decompressed) byte stream to the lane chunk by chunk;
//! the lane splits the records as `records._separated` does (`split`), parses each with `json.rs` and, when the
//! record is an event of the common form on a connection the reader has registered, reads its values
//! (`values`) into a plan and applies it (`events`): rows into typed column buffers of that connection
//! (`columns`), with the connection's state (origin, first times, ACK delay parameters, counts) kept here.
//! Any other record (a header, damage, a first event of a connection, a value of an unusual type) goes back to
//! the reader untouched, before anything was changed, and the reader handles it as it always does: its
//! connection objects read and write their state here (`lane`: `get` / `set`), and the rows the lane buffered
//! for a connection move into the reader's Python lists before the reader adds a row of its own, so the rows
//! stay in event order.

mod columns;
mod events;
mod lane;
mod plausibility;
mod split;
mod values;

pub use lane::QlogLane;
pub use plausibility::{plausibility_frames, plausibility_metrics, plausibility_packets};
