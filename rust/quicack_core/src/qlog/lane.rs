//! The lane itself (`QlogLane`): the Python reader's record loop (`_FileReader._event`) over the splitter,
//! the parser and the connections' event handlers, and the interface through which the reader shares its
//! state with the lane (connections registered and released, their fields and counters read and written,
//! rows taken out as Python lists or Arrow tables, rows of the Python handlers taken in).

use std::collections::HashMap;

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyTuple};

use super::columns::{arrow_columns, batch_columns, int_value, Attrs, Rows};
use super::events::*;
use super::split::{blank, record_text, Split, Splitter};
use super::values::*;
use crate::arrow::ArrowTable;
use crate::json::{Obj, Tape, Value};

// What `step` stops for.
const STOP_NEED: i64 = 0;
const STOP_END: i64 = 1;
const STOP_RECORD: i64 = 2;
const STOP_TOO_LONG: i64 = 3;
const STOP_FLUSH: i64 = 4;


/// The compiled lane of one JSON-SEQ / NDJSON qlog file (see the module comment).
#[pyclass(module = "quicack_core", name = "QlogLane")]
pub struct QlogLane {
    split: Splitter,
    tape: Tape, // reused from record to record
    lines: bool,
    max_depth: usize,
    batch_events: i64,
    number: i64,
    // the reader's counters (_FileReader.pending, events_since_batch, events_before_batch, bad_times, ...)
    pending: i64,
    events_since_batch: i64,
    events_before_batch: i64,
    bad_times: i64,
    first_bad_time: Option<(i64, f64)>,
    dirty: Py<PyDict>,
    trace: Option<TraceState>,
    conns: Vec<Conn>,
    by_group: HashMap<i64, HashMap<String, usize>>,
}

impl QlogLane {
    fn conn(&self, cid: usize) -> PyResult<&Conn> {
        self.conns.get(cid).ok_or_else(|| PyIndexError::new_err("no such connection"))
    }

    fn conn_mut(&mut self, cid: usize) -> PyResult<&mut Conn> {
        self.conns.get_mut(cid).ok_or_else(|| PyIndexError::new_err("no such connection"))
    }

    /// `_FileReader._event` for one parsed event record; HandOff leaves everything as it was.
    fn event(&mut self, py: Python<'_>, ev: Obj<'_>) -> Checked<()> {
        let trace = self.trace.as_ref().ok_or(HandOff)?;
        let [name, time, group_id, data] = ev.fields(|k| match k {
            "name" => Some(0),
            "time" => Some(1),
            "group_id" => Some(2),
            "data" => Some(3),
            _ => None,
        });
        let name = match name {
            Some(Value::Str(s)) if s.is_ascii() => s,
            _ => return Err(HandOff),
        };
        let t = match time {
            Some(Value::Int(i)) => i as f64,
            Some(Value::Float(f)) => f,
            _ => return Err(HandOff),
        };
        let cid = match group_id {
            None | Some(Value::Null) => trace.conn,
            Some(Value::Str(g)) => {
                if !trace.group_is_connection || trace.group_id.as_deref() == Some(g) {
                    trace.conn
                } else {
                    self.by_group.get(&trace.index).and_then(|m| m.get(g)).copied()
                }
            }
            Some(_) => return Err(HandOff),
        }
        .ok_or(HandOff)?;
        let conn = &self.conns[cid];
        if conn.python_owned || conn.first_t.is_none() {
            return Err(HandOff);
        }
        let plan = match data {
            Some(Value::Object(data)) => match event_kind(name) {
                KIND_OTHER => Plan::Nothing,
                kind => conn.plan(kind, data)?,
            },
            _ => Plan::Nothing,
        };
        // From here on the event is the lane's.
        self.pending += 1;
        self.events_since_batch += 1;
        let conn = &mut self.conns[cid];
        if conn.pending_events == 0 {
            // first event since the connection's last flush (a dict keeps the first position of a key)
            if self.dirty.bind(py).set_item(conn.key.bind(py), py.None()).is_err() {
                return Err(HandOff); // cannot happen for a tuple key; the reader would fail the same way
            }
        }
        let mut t = t * conn.time_to_ms;
        let trace = self.trace.as_mut().expect("checked above");
        if trace.delta {
            t += trace.last_t;
        }
        if !(-MAX_TIME_MS < t && t < MAX_TIME_MS) {
            self.bad_times += 1;
            if self.first_bad_time.is_none() {
                self.first_bad_time = Some((self.events_before_batch + self.events_since_batch, t));
            }
            return Ok(());
        }
        if trace.delta {
            trace.last_t = t;
        }
        conn.events += 1;
        conn.pending_events += 1;
        conn.apply(t, plan);
        Ok(())
    }
}

fn float_field(value: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    if value.is_none() {
        Ok(None)
    } else if value.is_exact_instance_of::<PyFloat>() {
        Ok(Some(value.extract()?))
    } else {
        Err(PyTypeError::new_err("a float or None"))
    }
}

fn int_field(value: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if value.is_none() {
        Ok(None)
    } else {
        int_value(value).map(Some)
    }
}

fn bool_field(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    if value.is_exact_instance_of::<PyBool>() {
        value.extract()
    } else {
        Err(PyTypeError::new_err("a bool"))
    }
}

fn space_code(space: &Bound<'_, PyAny>) -> PyResult<Option<Option<u8>>> {
    if space.is_none() {
        return Ok(Some(None));
    }
    let Ok(text) = space.extract::<&str>() else { return Ok(None) };
    Ok(PN_SPACES.iter().position(|s| *s == text).map(|c| Some(c as u8)))
}

#[pymethods]
impl QlogLane {
    /// The columns of the flat rows of each table (packets, frames, metrics), which the Python reader's handlers
    /// buffer in the same order (`normalize.PACKET_COLUMNS`, `FRAME_COLUMNS`, `METRIC_COLUMNS`).
    #[staticmethod]
    fn row_columns() -> Vec<Vec<&'static str>> {
        [PacketRows::NAMES, FrameRows::NAMES, MetricRows::NAMES].map(<[&str]>::to_vec).to_vec()
    }

    #[new]
    fn new(dirty: Py<PyDict>, max_record_bytes: u64, max_nesting_depth: usize, batch_events: i64) -> Self {
        QlogLane {
            split: Splitter::new(0x1e, max_record_bytes),
            tape: Tape::default(),
            lines: false,
            max_depth: max_nesting_depth,
            batch_events: batch_events.max(1),
            number: 0,
            pending: 0,
            events_since_batch: 0,
            events_before_batch: 0,
            bad_times: 0,
            first_bad_time: None,
            dirty,
            trace: None,
            conns: Vec::new(),
            by_group: HashMap::new(),
        }
    }

    /// Records are separated by newlines (NDJSON, an RS before a line is dropped) or by RS (JSON-SEQ).
    fn start(&mut self, lines: bool) {
        self.lines = lines;
        self.split.separator = if lines { b'\n' } else { 0x1e };
    }

    /// The next bytes of the stream; empty at its end.
    fn feed(&mut self, chunk: &[u8]) {
        self.split.feed(chunk);
    }

    /// Reads records until one needs the reader: (STOP_NEED,) more bytes, (STOP_END,), (STOP_RECORD, offset,
    /// number, bytes, last) a record for the Python reader, (STOP_TOO_LONG, offset, number, length), or
    /// (STOP_FLUSH,) a batch is full.
    fn step(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        loop {
            let (start, end, offset, last) = match self.split.next() {
                Split::Need => return Ok((STOP_NEED,).into_py(py)),
                Split::End => return Ok((STOP_END,).into_py(py)),
                Split::TooLong { offset, length } => {
                    self.number += 1;
                    return Ok((STOP_TOO_LONG, offset, self.number, length).into_py(py));
                }
                Split::Record { start, end, offset, last } => (start, end, offset, last),
            };
            let part = &self.split.buf[start..end];
            let part = record_text(part, offset, self.lines);
            if blank(part) {
                continue;
            }
            self.number += 1;
            // The record lives in the splitter's buffer, lent out while the event changes the state.
            let buf = std::mem::take(&mut self.split.buf);
            let part = &buf[start..end];
            let part = record_text(part, offset, self.lines);
            let mut tape = std::mem::take(&mut self.tape);
            let handled = match tape.parse(part, self.max_depth) {
                Ok(doc) => match doc.root() {
                    Value::Object(event) => self.event(py, event).is_ok(),
                    _ => false,
                },
                Err(_) => false,
            };
            self.tape = tape;
            self.split.buf = buf;
            if !handled {
                let part = &self.split.buf[start..end];
                let part = record_text(part, offset, self.lines);
                return Ok((STOP_RECORD, offset, self.number, PyBytes::new_bound(py, part), last).into_py(py));
            }
            if self.pending >= self.batch_events {
                return Ok((STOP_FLUSH,).into_py(py));
            }
        }
    }

    #[getter]
    fn next_offset(&self) -> u64 {
        self.split.next_offset
    }

    #[getter]
    fn number(&self) -> i64 {
        self.number
    }

    /// The reader's current trace (None: no header yet, the lane hands every record back).
    #[pyo3(signature = (index=None, group_id=None, group_is_connection=true, delta=false, last_t=0.0, conn=None))]
    fn set_trace(
        &mut self,
        index: Option<i64>,
        group_id: Option<String>,
        group_is_connection: bool,
        delta: bool,
        last_t: f64,
        conn: Option<usize>,
    ) {
        self.trace = index.map(|index| TraceState { index, group_id, group_is_connection, delta, last_t, conn });
    }

    /// The current trace's last event time (its time_format "delta" adds to it).
    #[getter]
    fn last_t(&self) -> f64 {
        self.trace.as_ref().map_or(0.0, |t| t.last_t)
    }

    /// A new connection of the reader; its number.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (key, trace_index, group, vantage, time_to_ms, rtt_to_ms, ack_delay, received_time_from_datagram,
                        header_length_is_packet_size, missing_ack_delay_is_zero))]
    fn register(
        &mut self,
        key: PyObject,
        trace_index: i64,
        group: Option<String>,
        vantage: Option<&str>,
        time_to_ms: f64,
        rtt_to_ms: f64,
        ack_delay: &str,
        received_time_from_datagram: bool,
        header_length_is_packet_size: bool,
        missing_ack_delay_is_zero: bool,
    ) -> PyResult<usize> {
        let ack_delay = match ack_delay {
            "ms" => ACK_DELAY_MS,
            "us" => ACK_DELAY_US,
            "encoded" => ACK_DELAY_ENCODED,
            "encoded_ms" => ACK_DELAY_ENCODED_MS,
            other => return Err(PyValueError::new_err(format!("unknown ack_delay unit {other:?}"))),
        };
        let cid = self.conns.len();
        self.conns.push(Conn::new(
            key,
            vantage,
            time_to_ms,
            rtt_to_ms,
            ack_delay,
            received_time_from_datagram,
            header_length_is_packet_size,
            missing_ack_delay_is_zero,
        ));
        if let Some(group) = group {
            self.by_group.entry(trace_index).or_default().insert(group, cid);
        }
        Ok(cid)
    }

    /// From now on the reader keeps this connection (the lane hands all its events back).
    fn release(&mut self, cid: usize) -> PyResult<()> {
        self.conn_mut(cid)?.python_owned = true;
        Ok(())
    }

    /// Field `field` of connection `cid` (0 origin_t, 1 first_t, 2 first_packet_t, 3 events, 4 pending_events,
    /// 5 local_max_ack_delay_ms, 6 peer_max_ack_delay_ms, 7 local_ack_delay_exponent, 8 peer_ack_delay_exponent,
    /// 9 peer_params_seen, 10 local_params_seen, 11 handshake_confirmed_t, 12 last_datagram_rx_t).
    fn get(&self, py: Python<'_>, cid: usize, field: usize) -> PyResult<PyObject> {
        let c = self.conn(cid)?;
        Ok(match field {
            0 => c.origin_t.into_py(py),
            1 => c.first_t.into_py(py),
            2 => c.first_packet_t.into_py(py),
            3 => c.events.into_py(py),
            4 => c.pending_events.into_py(py),
            5 => c.local_max_ack_delay_ms.into_py(py),
            6 => c.peer_max_ack_delay_ms.into_py(py),
            7 => c.local_ack_delay_exponent.into_py(py),
            8 => c.peer_ack_delay_exponent.into_py(py),
            9 => c.peer_params_seen.into_py(py),
            10 => c.local_params_seen.into_py(py),
            11 => c.handshake_confirmed_t.into_py(py),
            12 => c.last_datagram_rx_t.into_py(py),
            _ => return Err(PyIndexError::new_err("no such field")),
        })
    }

    /// Sets a field (see `get`); TypeError / OverflowError when the value is not of the field's type.
    fn set(&mut self, cid: usize, field: usize, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let c = self.conn_mut(cid)?;
        match field {
            0 => c.origin_t = float_field(value)?,
            1 => c.first_t = float_field(value)?,
            2 => c.first_packet_t = float_field(value)?,
            3 => c.events = int_value(value)?,
            4 => c.pending_events = int_value(value)?,
            5 => c.local_max_ack_delay_ms = float_field(value)?,
            6 => c.peer_max_ack_delay_ms = float_field(value)?,
            7 => c.local_ack_delay_exponent = int_field(value)?,
            8 => c.peer_ack_delay_exponent = int_field(value)?,
            9 => c.peer_params_seen = bool_field(value)?,
            10 => c.local_params_seen = bool_field(value)?,
            11 => c.handshake_confirmed_t = float_field(value)?,
            12 => c.last_datagram_rx_t = float_field(value)?,
            _ => return Err(PyIndexError::new_err("no such field")),
        }
        Ok(())
    }

    /// The reader's counters: 0 pending, 1 events_since_batch, 2 events_before_batch, 3 bad_times,
    /// 4 first_bad_time ((event number, time) or None).
    fn get_counter(&self, py: Python<'_>, field: usize) -> PyResult<PyObject> {
        Ok(match field {
            0 => self.pending.into_py(py),
            1 => self.events_since_batch.into_py(py),
            2 => self.events_before_batch.into_py(py),
            3 => self.bad_times.into_py(py),
            4 => self.first_bad_time.into_py(py),
            _ => return Err(PyIndexError::new_err("no such counter")),
        })
    }

    fn set_counter(&mut self, field: usize, value: &Bound<'_, PyAny>) -> PyResult<()> {
        match field {
            0 => self.pending = int_value(value)?,
            1 => self.events_since_batch = int_value(value)?,
            2 => self.events_before_batch = int_value(value)?,
            3 => self.bad_times = int_value(value)?,
            4 => {
                self.first_bad_time = if value.is_none() {
                    None
                } else {
                    let pair = value.downcast::<PyTuple>()?;
                    Some((int_value(&pair.get_item(0)?)?, pair.get_item(1)?.extract()?))
                }
            }
            _ => return Err(PyIndexError::new_err("no such counter")),
        }
        Ok(())
    }

    /// Whether the lane holds rows of connection `cid`.
    fn has_rows(&self, cid: usize) -> PyResult<bool> {
        let rows = &self.conn(cid)?.rows;
        Ok((0..3).any(|table| rows.count(table) > 0))
    }

    /// The rows of one table (0 packets, 1 frames, 2 metrics) of connection `cid` as the flat Python list
    /// TraceConnection buffers (row after row), taken out of the lane.
    fn take_python<'py>(&mut self, py: Python<'py>, cid: usize, table: usize) -> PyResult<Bound<'py, PyList>> {
        self.conn_mut(cid)?.rows.take_python(py, table)
    }

    /// Puts rows the Python handlers buffered for connection `cid` (a flat list of one table, row after row)
    /// before the lane's rows of that table, if every value is of its column's own type; False leaves them.
    fn absorb(&mut self, cid: usize, table: usize, flat: &Bound<'_, PyList>) -> PyResult<bool> {
        let Ok(front) = Rows::from_python(table, flat) else { return Ok(false) };
        self.conn_mut(cid)?.rows.prepend(table, front);
        Ok(true)
    }

    /// The rows of one table of connections `cids`, in that order, as an Arrow table (columns of
    /// PACKET_COLUMNS / FRAME_COLUMNS / METRIC_COLUMNS), and the number of rows of each; taken out of the lane.
    fn take_arrow(&mut self, py: Python<'_>, table: usize, cids: Vec<usize>) -> PyResult<(PyObject, Vec<usize>)> {
        let mut lengths = Vec::with_capacity(cids.len());
        for &cid in &cids {
            lengths.push(self.conn(cid)?.rows.count(table));
        }
        let total: usize = lengths.iter().sum();
        let parts = cids.iter().map(|&cid| self.conns[cid].rows.take_table(table)).collect();
        let columns = arrow_columns(table, parts);
        Ok((ArrowTable::new(columns, total).into_py(py), lengths))
    }

    /// As `take_arrow`, with the columns the batch assembly derives from the rows and their connections computed
    /// here (`columns::batch_columns`): the contract's columns of the table, but those no qlog fills. Per
    /// connection of `cids`: its run id, vantage, time origin (origin_t or 0.0) and reference (ref_abs_ns).
    /// Arguments of other types raise before any row is taken.
    #[allow(clippy::too_many_arguments)]
    fn take_batch(
        &mut self,
        py: Python<'_>,
        table: usize,
        cids: Vec<usize>,
        run_ids: Vec<String>,
        vantages: Vec<Option<String>>,
        origins: Vec<f64>,
        refs: Vec<Option<i64>>,
    ) -> PyResult<(PyObject, Vec<usize>)> {
        let n = cids.len();
        if [run_ids.len(), vantages.len(), origins.len(), refs.len()].iter().any(|&len| len != n) {
            return Err(PyValueError::new_err("one run id, vantage, origin and reference per connection"));
        }
        let mut lengths = Vec::with_capacity(n);
        for &cid in &cids {
            lengths.push(self.conn(cid)?.rows.count(table));
        }
        let total: usize = lengths.iter().sum();
        let attrs: Vec<Attrs> = run_ids
            .into_iter()
            .zip(vantages)
            .zip(origins.into_iter().zip(refs))
            .map(|((run_id, vantage), (origin, ref_abs_ns))| Attrs { run_id, vantage, origin, ref_abs_ns })
            .collect();
        let parts = cids.iter().map(|&cid| self.conns[cid].rows.take_table(table)).collect();
        let columns = batch_columns(table, parts, &attrs);
        Ok((ArrowTable::new(columns, total).into_py(py), lengths))
    }

    // quicack:ack_sent reasons of connection `cid` (TraceConnection.ack_reasons), for the Python handlers.

    fn ack_reasons_len(&self, cid: usize) -> PyResult<usize> {
        Ok(self.conn(cid)?.ack_reasons.len())
    }

    fn ack_reason_pop(
        &mut self,
        py: Python<'_>,
        cid: usize,
        space: &Bound<'_, PyAny>,
        packet_number: &Bound<'_, PyAny>,
        default: PyObject,
    ) -> PyResult<PyObject> {
        let Some(space) = space_code(space)? else { return Ok(default) };
        let pn = if packet_number.is_none() {
            None
        } else {
            match int_value(packet_number) {
                Ok(v) => Some(v),
                Err(_) => return Ok(default), // the lane holds no such key
            }
        };
        Ok(match self.conn_mut(cid)?.ack_reasons.remove(&(space, pn)) {
            Some(value) => value.into_py(py),
            None => default,
        })
    }

    /// TypeError / OverflowError when the key or value is not one the lane can hold.
    fn ack_reason_set(
        &mut self,
        cid: usize,
        space: &Bound<'_, PyAny>,
        packet_number: &Bound<'_, PyAny>,
        reason: &Bound<'_, PyAny>,
        acked: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let space = space_code(space)?.ok_or_else(|| PyTypeError::new_err("a packet number space"))?;
        let pn = int_field(packet_number)?;
        let reason: Option<String> = if reason.is_none() { None } else { Some(reason.extract()?) };
        let acked = int_field(acked)?;
        self.conn_mut(cid)?.ack_reasons.insert((space, pn), (reason, acked));
        Ok(())
    }

    /// All reasons of connection `cid` as TraceConnection's dict, taken out of the lane.
    fn take_ack_reasons<'py>(&mut self, py: Python<'py>, cid: usize) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new_bound(py);
        for ((space, pn), value) in std::mem::take(&mut self.conn_mut(cid)?.ack_reasons) {
            let key = (space.map(|c| PN_SPACES[c as usize]), pn);
            out.set_item(key, value)?;
        }
        Ok(out)
    }

}
