//! The row buffers of one connection, column by column (`normalize.PACKET_COLUMNS`, `FRAME_COLUMNS`,
//! `METRIC_COLUMNS`), and their three ways out and in: a flat Python list as `TraceConnection` buffers rows
//! (row after row), rows the Python handlers buffered taken back in, and the Arrow table of a batch.
//! Tables are numbered as the Python side numbers them: 0 packets, 1 frames, 2 metrics.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyList, PyLong, PyString};

use super::values::{Num, EVENTS, EXACT_FLOAT_INT, FRAME_NAMES, PACKET_TYPES, PN_SPACES};
use crate::arrow::Column;

/// A struct of column vectors, with the rows of another buffer of its kind put after or before its own.
macro_rules! row_columns {
    ($(#[$doc:meta])* $name:ident { $($field:ident: $ty:ty),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Default)]
        pub struct $name {
            $(pub $field: Vec<$ty>,)+
        }

        impl $name {
            /// `other`'s rows after these.
            pub fn append(&mut self, mut other: Self) {
                $(self.$field.append(&mut other.$field);)+
            }

            /// `front`'s rows before these.
            pub fn prepend(&mut self, mut front: Self) {
                $(
                    front.$field.append(&mut self.$field);
                    self.$field = front.$field;
                )+
            }
        }
    };
}

row_columns!(
    /// Packet rows; `event`, `packet_type` and `pn_space` as codes of EVENTS, PACKET_TYPES, PN_SPACES.
    PacketRows {
        event: u8,
        t: f64,
        packet_type: u8,
        pn_space: Option<u8>,
        packet_number: Option<i64>,
        packet_bytes: Option<i64>,
        aead_tag_bytes: Option<i64>,
        ack_eliciting: Option<bool>,
        frames_logged: bool,
    }
);

row_columns!(
    /// Frame rows; `frame_type` as a code of FRAME_NAMES.
    FrameRows {
        event: u8,
        t: f64,
        pn_space: Option<u8>,
        packet_number: Option<i64>,
        frame_index: i64,
        frame_type: u8,
        frame_bytes: Option<i64>,
        ack_delay_ms: Option<f64>,
        largest_acked: Option<i64>,
        first_ack_range: Option<i64>,
        ack_ranges: Option<String>,
        stream_id: Option<i64>,
        offset: Option<i64>,
        length: Option<i64>,
        fin: Option<bool>,
        ack_reason: Option<String>,
        ack_eliciting_since_previous_ack: Option<i64>,
    }
);

row_columns!(
    /// Metric rows; the RTTs as the log wrote them (`Num`), in ms.
    MetricRows {
        t: f64,
        smoothed_rtt: Option<Num>,
        rtt_variance: Option<Num>,
        latest_rtt: Option<Num>,
        min_rtt: Option<Num>,
        pto_count: Option<i64>,
        cwnd_bytes: Option<i64>,
        bytes_in_flight: Option<i64>,
    }
);

impl MetricRows {
    pub fn rtts_mut(&mut self) -> [&mut Vec<Option<Num>>; 4] {
        [&mut self.smoothed_rtt, &mut self.rtt_variance, &mut self.latest_rtt, &mut self.min_rtt]
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
pub const WIDTHS: [usize; 3] = [9, 17, 8];

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
        let name = |codes: &[&'static str], code: u8| codes[code as usize];
        match table {
            0 => {
                let r = std::mem::take(&mut self.packets);
                for i in 0..r.t.len() {
                    out.append(name(&EVENTS, r.event[i]))?;
                    out.append(r.t[i])?;
                    out.append(name(&PACKET_TYPES, r.packet_type[i]))?;
                    out.append(r.pn_space[i].map(|c| name(&PN_SPACES, c)))?;
                    out.append(r.packet_number[i])?;
                    out.append(r.packet_bytes[i])?;
                    out.append(r.aead_tag_bytes[i])?;
                    out.append(r.ack_eliciting[i])?;
                    out.append(r.frames_logged[i])?;
                }
            }
            1 => {
                let r = std::mem::take(&mut self.frames);
                for i in 0..r.t.len() {
                    out.append(name(&EVENTS, r.event[i]))?;
                    out.append(r.t[i])?;
                    out.append(r.pn_space[i].map(|c| name(&PN_SPACES, c)))?;
                    out.append(r.packet_number[i])?;
                    out.append(r.frame_index[i])?;
                    out.append(name(&FRAME_NAMES, r.frame_type[i]))?;
                    out.append(r.frame_bytes[i])?;
                    out.append(r.ack_delay_ms[i])?;
                    out.append(r.largest_acked[i])?;
                    out.append(r.first_ack_range[i])?;
                    out.append(r.ack_ranges[i].as_deref())?;
                    out.append(r.stream_id[i])?;
                    out.append(r.offset[i])?;
                    out.append(r.length[i])?;
                    out.append(r.fin[i])?;
                    out.append(r.ack_reason[i].as_deref())?;
                    out.append(r.ack_eliciting_since_previous_ack[i])?;
                }
            }
            _ => {
                let r = std::mem::take(&mut self.metrics);
                for i in 0..r.t.len() {
                    out.append(r.t[i])?;
                    for column in [&r.smoothed_rtt, &r.rtt_variance, &r.latest_rtt, &r.min_rtt] {
                        match column[i] {
                            None => out.append(py.None())?,
                            Some(Num::I(v)) => out.append(v)?,
                            Some(Num::F(v)) => out.append(v)?,
                        }
                    }
                    out.append(r.pto_count[i])?;
                    out.append(r.cwnd_bytes[i])?;
                    out.append(r.bytes_in_flight[i])?;
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
                0 => {
                    let r = &mut rows.packets;
                    r.event.push(code_in(&EVENTS, &row[0])?);
                    r.t.push(strict_float(&row[1])?);
                    r.packet_type.push(code_in(&PACKET_TYPES, &row[2])?);
                    r.pn_space.push(opt_code_in(&PN_SPACES, &row[3])?);
                    r.packet_number.push(strict_opt_int(&row[4])?);
                    r.packet_bytes.push(strict_opt_int(&row[5])?);
                    r.aead_tag_bytes.push(strict_opt_int(&row[6])?);
                    r.ack_eliciting.push(strict_opt_bool(&row[7])?);
                    r.frames_logged.push(strict_opt_bool(&row[8])?.ok_or(())?);
                }
                1 => {
                    let f = &mut rows.frames;
                    f.event.push(code_in(&EVENTS, &row[0])?);
                    f.t.push(strict_float(&row[1])?);
                    f.pn_space.push(opt_code_in(&PN_SPACES, &row[2])?);
                    f.packet_number.push(strict_opt_int(&row[3])?);
                    f.frame_index.push(strict_opt_int(&row[4])?.ok_or(())?);
                    f.frame_type.push(code_in(&FRAME_NAMES, &row[5])?);
                    f.frame_bytes.push(strict_opt_int(&row[6])?);
                    f.ack_delay_ms.push(strict_opt_float(&row[7])?);
                    f.largest_acked.push(strict_opt_int(&row[8])?);
                    f.first_ack_range.push(strict_opt_int(&row[9])?);
                    f.ack_ranges.push(strict_opt_text(&row[10])?);
                    f.stream_id.push(strict_opt_int(&row[11])?);
                    f.offset.push(strict_opt_int(&row[12])?);
                    f.length.push(strict_opt_int(&row[13])?);
                    f.fin.push(strict_opt_bool(&row[14])?);
                    f.ack_reason.push(strict_opt_text(&row[15])?);
                    f.ack_eliciting_since_previous_ack.push(strict_opt_int(&row[16])?);
                }
                _ => {
                    let m = &mut rows.metrics;
                    m.t.push(strict_float(&row[0])?);
                    for (column, value) in m.rtts_mut().into_iter().zip(&row[1..5]) {
                        column.push(strict_opt_num(value)?);
                    }
                    m.pto_count.push(strict_opt_int(&row[5])?);
                    m.cwnd_bytes.push(strict_opt_int(&row[6])?);
                    m.bytes_in_flight.push(strict_opt_int(&row[7])?);
                }
            }
        }
        Ok(rows)
    }
}

/// The columns of one table (PACKET_COLUMNS / FRAME_COLUMNS / METRIC_COLUMNS) of `parts`' rows in that order,
/// for an `ArrowTable`.
pub fn arrow_columns(table: usize, parts: Vec<Rows>) -> Vec<(String, Column)> {
    let name = |s: &str| s.to_string();
    match table {
        0 => {
            let mut c = PacketRows::default();
            for rows in parts {
                c.append(rows.packets);
            }
            vec![
                (name("event"), Column::Names(&EVENTS, all(c.event))),
                (name("t"), Column::Float(all(c.t))),
                (name("packet_type"), Column::Names(&PACKET_TYPES, all(c.packet_type))),
                (name("pn_space"), Column::Names(&PN_SPACES, c.pn_space)),
                (name("packet_number"), Column::Int(c.packet_number)),
                (name("packet_bytes"), Column::Int(c.packet_bytes)),
                (name("aead_tag_bytes"), Column::Int(c.aead_tag_bytes)),
                (name("ack_eliciting"), Column::Bool(c.ack_eliciting)),
                (name("frames_logged"), Column::Bool(all(c.frames_logged))),
            ]
        }
        1 => {
            let mut c = FrameRows::default();
            for rows in parts {
                c.append(rows.frames);
            }
            vec![
                (name("event"), Column::Names(&EVENTS, all(c.event))),
                (name("t"), Column::Float(all(c.t))),
                (name("pn_space"), Column::Names(&PN_SPACES, c.pn_space)),
                (name("packet_number"), Column::Int(c.packet_number)),
                (name("frame_index"), Column::Int(all(c.frame_index))),
                (name("frame_type"), Column::Names(&FRAME_NAMES, all(c.frame_type))),
                (name("frame_bytes"), Column::Int(c.frame_bytes)),
                (name("ack_delay_ms"), Column::Float(c.ack_delay_ms)),
                (name("largest_acked"), Column::Int(c.largest_acked)),
                (name("first_ack_range"), Column::Int(c.first_ack_range)),
                (name("ack_ranges"), Column::Text(c.ack_ranges)),
                (name("stream_id"), Column::Int(c.stream_id)),
                (name("offset"), Column::Int(c.offset)),
                (name("length"), Column::Int(c.length)),
                (name("fin"), Column::Bool(c.fin)),
                (name("ack_reason"), Column::Text(c.ack_reason)),
                (name("ack_eliciting_since_previous_ack"), Column::Int(c.ack_eliciting_since_previous_ack)),
            ]
        }
        _ => {
            let mut c = MetricRows::default();
            for rows in parts {
                c.append(rows.metrics);
            }
            let floats = |v: Vec<Option<Num>>| Column::Float(v.into_iter().map(|n| n.map(Num::float)).collect());
            vec![
                (name("t"), Column::Float(all(c.t))),
                (name("smoothed_rtt_ms"), floats(c.smoothed_rtt)),
                (name("rtt_variance_ms"), floats(c.rtt_variance)),
                (name("latest_rtt_ms"), floats(c.latest_rtt)),
                (name("min_rtt_ms"), floats(c.min_rtt)),
                (name("pto_count"), Column::Int(c.pto_count)),
                (name("cwnd_bytes"), Column::Int(c.cwnd_bytes)),
                (name("bytes_in_flight"), Column::Int(c.bytes_in_flight)),
            ]
        }
    }
}

/// Every value of a column without nulls.
fn all<T>(values: Vec<T>) -> Vec<Option<T>> {
    values.into_iter().map(Some).collect()
}

/// An exact Python int that fits int64 (OverflowError beyond it, TypeError for any other type).
pub fn int_value(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    if value.is_exact_instance_of::<PyLong>() {
        value.extract()
    } else {
        Err(pyo3::exceptions::PyTypeError::new_err("an int"))
    }
}

fn code_in(names: &[&str], value: &Bound<'_, PyAny>) -> Result<u8, ()> {
    let text: &str = value.extract().map_err(|_| ())?;
    names.iter().position(|n| *n == text).map(|c| c as u8).ok_or(())
}

fn opt_code_in(names: &[&str], value: &Bound<'_, PyAny>) -> Result<Option<u8>, ()> {
    if value.is_none() {
        Ok(None)
    } else {
        code_in(names, value).map(Some)
    }
}

fn strict_float(value: &Bound<'_, PyAny>) -> Result<f64, ()> {
    if value.is_exact_instance_of::<PyFloat>() {
        value.extract().map_err(|_| ())
    } else {
        Err(())
    }
}

fn strict_opt_float(value: &Bound<'_, PyAny>) -> Result<Option<f64>, ()> {
    if value.is_none() {
        Ok(None)
    } else {
        strict_float(value).map(Some)
    }
}

fn strict_opt_int(value: &Bound<'_, PyAny>) -> Result<Option<i64>, ()> {
    if value.is_none() {
        Ok(None)
    } else {
        int_value(value).map(Some).map_err(|_| ())
    }
}

fn strict_opt_bool(value: &Bound<'_, PyAny>) -> Result<Option<bool>, ()> {
    if value.is_none() {
        Ok(None)
    } else if value.is_exact_instance_of::<PyBool>() {
        value.extract().map(Some).map_err(|_| ())
    } else {
        Err(())
    }
}

fn strict_opt_text(value: &Bound<'_, PyAny>) -> Result<Option<String>, ()> {
    if value.is_none() {
        Ok(None)
    } else if value.is_exact_instance_of::<PyString>() {
        value.extract().map(Some).map_err(|_| ())
    } else {
        Err(())
    }
}

fn strict_opt_num(value: &Bound<'_, PyAny>) -> Result<Option<Num>, ()> {
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

#[cfg(test)]
#[path = "../tests/qlog_columns.rs"]
mod tests;
