//! The row buffers of one connection, column by column (`normalize.PACKET_COLUMNS`, `FRAME_COLUMNS`,
//! `METRIC_COLUMNS`; declared where `events` fills them), and their three ways out and in: a flat Python list as
//! `TraceConnection` buffers rows (row after row), rows the Python handlers buffered taken back in, and the Arrow
//! table of a batch.
//! Tables are numbered as the Python side numbers them: 0 packets, 1 frames, 2 metrics.

use std::fmt::Write;

use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyList, PyString};

use super::events::{FrameRows, MetricRows, PacketRows};
use super::values::{Num, EXACT_FLOAT_INT};
use crate::arrow::Column;
use crate::contract::Dtype;
use crate::json::{Tape, Value};
pub use crate::row_columns::int_value;
use crate::row_columns::Cell;

/// A frame's ACK ranges, (low, high) pairs highest first: a list of {low, high} structs in Arrow (the contract's
/// ACK_RANGES, so polars need not parse text), the JSON text `[[low,high],...]` in the Python rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AckRanges(pub Vec<(i64, i64)>);

impl AckRanges {
    /// The JSON text of the Python rows (`normalize` writes it with orjson: no spaces).
    pub fn text(&self) -> String {
        let mut text = String::with_capacity(self.0.len() * 16 + 2);
        text.push('[');
        for (n, (low, high)) in self.0.iter().enumerate() {
            if n > 0 {
                text.push(',');
            }
            let _ = write!(text, "[{low},{high}]");
        }
        text.push(']');
        text
    }

    /// Ranges from that text: a list of [low, high] pairs of int64s, else Err (the rows stay Python's).
    fn parse(text: &str) -> Result<Self, ()> {
        let mut tape = Tape::default();
        let Value::Array(items) = tape.parse(text.as_bytes(), 3).map_err(|_| ())?.root() else { return Err(()) };
        let mut pairs = Vec::with_capacity(items.len());
        for item in items.iter() {
            let Value::Array(pair) = item else { return Err(()) };
            let mut values = pair.iter();
            match (values.next(), values.next(), values.next()) {
                (Some(Value::Int(low)), Some(Value::Int(high)), None) => pairs.push((low, high)),
                _ => return Err(()),
            }
        }
        Ok(AckRanges(pairs))
    }
}

impl Cell for Option<AckRanges> {
    const DTYPE: Dtype = Dtype::AckRanges;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        let mut ends = Vec::with_capacity(values.len());
        let mut valid = Vec::with_capacity(values.len());
        let mut pairs = Vec::new();
        for value in values {
            valid.push(value.is_some());
            pairs.extend(value.unwrap_or_default().0);
            ends.push(pairs.len() as i32);
        }
        Column::Ranges(ends, valid, pairs)
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(self.as_ref().map(AckRanges::text))
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        if value.is_none() {
            Ok(None)
        } else if value.is_exact_instance_of::<PyString>() {
            AckRanges::parse(value.extract().map_err(|_| ())?).map(Some)
        } else {
            Err(())
        }
    }
}

/// The metrics' RTTs as the log wrote them: an int stays an int in the Python rows, a float column in Arrow.
impl Cell for Option<Num> {
    const DTYPE: Dtype = Dtype::Float;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Float(values.into_iter().map(|n| n.map(Num::float)).collect())
    }
    fn column_of(parts: Vec<Vec<Self>>, _: &'static [&'static str]) -> Column {
        let floats: Vec<Vec<Option<f64>>> =
            parts.into_iter().map(|part| part.into_iter().map(|n| n.map(Num::float)).collect()).collect();
        <Option<f64> as Cell>::column_of(floats, &[])
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        match self {
            None => out.append(out.py().None()),
            Some(Num::I(v)) => out.append(*v),
            Some(Num::F(v)) => out.append(*v),
        }
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        if value.is_none() {
            Ok(None)
        } else if value.is_exact_instance_of::<PyFloat>() {
            value.extract().map(|f| Some(Num::F(f))).map_err(|_| ())
        } else {
            match int_value(value) {
                Ok(i) if i.abs() <= EXACT_FLOAT_INT => Ok(Some(Num::I(i))),
                _ => Err(()),
            }
        }
    }
}

/// The rows of one connection.
#[derive(Default)]
pub struct Rows {
    pub packets: PacketRows,
    pub frames: FrameRows,
    pub metrics: MetricRows,
}

/// Values of a row in the flat Python list of each table.
pub const WIDTHS: [usize; 3] = [PacketRows::WIDTH, FrameRows::WIDTH, MetricRows::WIDTH];

impl Rows {
    pub fn count(&self, table: usize) -> usize {
        match table {
            0 => self.packets.t.len(),
            1 => self.frames.t.len(),
            _ => self.metrics.t.len(),
        }
    }

    /// The rows of `table`, taken out (the other tables of the result are empty).
    pub fn take_table(&mut self, table: usize) -> Rows {
        let mut out = Rows::default();
        match table {
            0 => out.packets = std::mem::take(&mut self.packets),
            1 => out.frames = std::mem::take(&mut self.frames),
            _ => out.metrics = std::mem::take(&mut self.metrics),
        }
        out
    }

    /// `front`'s rows of `table` before these.
    pub fn prepend(&mut self, table: usize, front: Rows) {
        match table {
            0 => self.packets.prepend(front.packets),
            1 => self.frames.prepend(front.frames),
            _ => self.metrics.prepend(front.metrics),
        }
    }

    /// The rows of `table` as the flat Python list TraceConnection buffers (row after row), taken out.
    pub fn take_python<'py>(&mut self, py: Python<'py>, table: usize) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty_bound(py);
        match table {
            0 => {
                let rows = std::mem::take(&mut self.packets);
                for i in 0..rows.t.len() {
                    rows.append_python(i, &out)?;
                }
            }
            1 => {
                let rows = std::mem::take(&mut self.frames);
                for i in 0..rows.t.len() {
                    rows.append_python(i, &out)?;
                }
            }
            _ => {
                let rows = std::mem::take(&mut self.metrics);
                for i in 0..rows.t.len() {
                    rows.append_python(i, &out)?;
                }
            }
        }
        Ok(out)
    }

    /// Rows of `table` from the flat list the Python handlers buffered, if every value is of its column's own
    /// type (what polars' strict constructor takes as is); anything else leaves the rows in Python (Err).
    pub fn from_python(table: usize, flat: &Bound<'_, PyList>) -> Result<Rows, ()> {
        let mut rows = Rows::default();
        let width = WIDTHS[table];
        if flat.len() % width != 0 {
            return Err(());
        }
        let values: Vec<Bound<'_, PyAny>> = flat.iter().collect();
        for row in values.chunks(width) {
            match table {
                0 => rows.packets.push_python(row)?,
                1 => rows.frames.push_python(row)?,
                _ => rows.metrics.push_python(row)?,
            }
        }
        Ok(rows)
    }
}

/// Text columns as string views, which polars takes as they are.
fn as_views(columns: Vec<(String, Column)>) -> Vec<(String, Column)> {
    let view = |column| match column {
        Column::Codes(names, codes) => Column::CodeViews(names, codes),
        Column::Names(names, codes) => Column::NameViews(names, codes),
        Column::Text(values) => Column::TextViews(values),
        other => other,
    };
    columns.into_iter().map(|(name, column)| (name, view(column))).collect()
}

/// The columns of one table (PACKET_COLUMNS / FRAME_COLUMNS / METRIC_COLUMNS) of `parts`' rows in that order,
/// for an `ArrowTable`.
pub fn arrow_columns(table: usize, parts: Vec<Rows>) -> Vec<(String, Column)> {
    as_views(match table {
        0 => {
            let mut c = PacketRows::default();
            for rows in parts {
                c.append(rows.packets);
            }
            c.into_arrow()
        }
        1 => {
            let mut c = FrameRows::default();
            for rows in parts {
                c.append(rows.frames);
            }
            c.into_arrow()
        }
        _ => {
            let mut c = MetricRows::default();
            for rows in parts {
                c.append(rows.metrics);
            }
            c.into_arrow()
        }
    })
}

/// What the batch assembly adds to the rows of one connection of a batch (`batch.Merged.finish`'s `attrs`).
pub struct Attrs {
    pub run_id: String,
    pub vantage: Option<String>,
    pub origin: f64,             // origin_t, 0.0 when none
    pub ref_abs_ns: Option<i64>, // Unix ns of trace time 0
}

/// One table (0 packets, 1 frames, 2 metrics) of a batch: the rows of `parts` (connections in order, `attrs`
/// each) with the contract's columns `batch.Merged.finish` derives computed here, as it computes them: run_id and
/// vantage of the row's connection, time_ms = t - origin; packets and frames: source "qlog" and the direction
/// (client sent / server received: c2s, client received / server sent: s2c, else null); packets: decrypted and
/// time_abs_ns = round(t * 1e6) (half to even, as polars rounds) + the connection's reference (wrapping, as
/// polars adds int64s; null without one). The trace time t itself is left out; so are raw_frame_type (the lane
/// hands frames of unknown types to the Python reader: always null here) and the columns no qlog fills.
pub fn batch_columns(table: usize, parts: Vec<Rows>, attrs: &[Attrs]) -> Vec<(String, Column)> {
    let lengths: Vec<usize> = parts.iter().map(|rows| rows.count(table)).collect();
    // the trace time and the event codes are read below; the time leaves by no column of its own
    let (t, event, columns) = match table {
        0 => {
            let mut parts: Vec<PacketRows> = parts.into_iter().map(|rows| rows.packets).collect();
            let t = parts.iter_mut().map(|p| std::mem::take(&mut p.t)).collect::<Vec<_>>().concat();
            let event = parts.iter().map(|p| p.event.as_slice()).collect::<Vec<_>>().concat();
            (t, Some(event), PacketRows::into_arrow_of(parts))
        }
        1 => {
            let mut parts: Vec<FrameRows> = parts.into_iter().map(|rows| rows.frames).collect();
            let t = parts.iter_mut().map(|p| std::mem::take(&mut p.t)).collect::<Vec<_>>().concat();
            let event = parts.iter().map(|p| p.event.as_slice()).collect::<Vec<_>>().concat();
            (t, Some(event), FrameRows::into_arrow_of(parts))
        }
        _ => {
            let mut parts: Vec<MetricRows> = parts.into_iter().map(|rows| rows.metrics).collect();
            let t = parts.iter_mut().map(|p| std::mem::take(&mut p.t)).collect::<Vec<_>>().concat();
            (t, None, MetricRows::into_arrow_of(parts))
        }
    };
    let mut out: Vec<(String, Column)> = as_views(columns).into_iter().filter(|(name, _)| name != "t").collect();
    let rows = t.len();
    let mut time_ms = Vec::with_capacity(rows);
    let mut time_abs_ns = Vec::with_capacity(if table == 0 { rows } else { 0 });
    let mut row = 0;
    for (conn, &n) in attrs.iter().zip(&lengths) {
        for &t in &t[row..row + n] {
            time_ms.push(t - conn.origin);
            if table == 0 {
                time_abs_ns.push(conn.ref_abs_ns.map(|r| ((t * 1e6).round_ties_even() as i64).wrapping_add(r)));
            }
        }
        row += n;
    }
    let repeated = |value: fn(&Attrs) -> Option<String>| {
        Column::RepeatedViews(attrs.iter().map(value).collect(), lengths.clone())
    };
    out.push(("run_id".into(), repeated(|a| Some(a.run_id.clone()))));
    out.push(("vantage".into(), repeated(|a| a.vantage.clone())));
    out.push(("time_ms".into(), Column::DenseFloat(time_ms)));
    if let Some(event) = event {
        const DIRECTIONS: [&str; 2] = ["c2s", "s2c"];
        let mut direction = Vec::with_capacity(rows);
        let mut row = 0;
        for (conn, &n) in attrs.iter().zip(&lengths) {
            let side = match conn.vantage.as_deref() {
                Some("client") => Some(0u8),
                Some("server") => Some(1u8),
                _ => None,
            };
            // event 0 sent, 1 received: a client's sent and a server's received packets go client to server
            direction.extend(event[row..row + n].iter().map(|&e| side.map(|s| s ^ e)));
            row += n;
        }
        out.push(("source".into(), Column::RepeatedViews(vec![Some("qlog".into())], vec![rows])));
        out.push(("direction".into(), Column::NameViews(&DIRECTIONS, direction)));
    }
    if table == 0 {
        out.push(("decrypted".into(), Column::Bool(vec![Some(true); rows])));
        out.push(("time_abs_ns".into(), Column::Int(time_abs_ns)));
    }
    conformed(table, out, rows)
}

/// `columns` as `Table.conform` would make them: the contract's columns of the table in its order, those the
/// lane does not fill as nulls of their type, so that conform finds the frame conformed already (its polars
/// `select` took ≈ 3 % of a qlog ingest, bench/README.md issue 37). A column the contract lacks stays, at the
/// end: conform rejects it as before.
fn conformed(table: usize, columns: Vec<(String, Column)>, rows: usize) -> Vec<(String, Column)> {
    let contract = match table {
        0 => crate::contract::packets::COLUMNS,
        1 => crate::contract::frames::COLUMNS,
        _ => crate::contract::metrics_logged::COLUMNS,
    };
    let mut columns: Vec<Option<(String, Column)>> = columns.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(contract.len());
    for column in contract {
        let own = columns.iter_mut().find(|c| c.as_ref().is_some_and(|(name, _)| name == column.name));
        out.push(match own.and_then(Option::take) {
            Some(own) => own,
            None => (column.name.to_string(), Column::Nulls(column.dtype, rows)),
        });
    }
    out.extend(columns.into_iter().flatten());
    out
}

#[cfg(test)]
#[path = "../tests/qlog_columns.rs"]
mod tests;
