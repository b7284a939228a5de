//! `plausibility_summaries`: what `quicack.qlog.plausibility.PlausibilityChecks.add_batch` gathers from a batch's
//! tables with one polars `group_by` per table, computed in one pass over the Arrow columns instead (the compiled
//! reader's batches; the Python reader keeps polars', and tests/test_qlog_engines.py compares the two).
//!
//! Per run_id, in the order the runs first appear, as polars aggregates: min / max skip nulls, `first` / `last`
//! of a filtered series are its first and last element (null included), a step of `diff` with a null is null and
//! neither counted nor a minimum. Any NaN or infinity in a column read gives None: the caller then asks polars
//! (whose order of NaN among numbers is its own).

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::types::Float64Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

/// Backward steps of a series in row order (`_backwards`); the tolerance (BACKWARDS_TOLERANCE_MS) is passed in,
/// so that it has one home.
struct Backwards {
    first: Option<Option<f64>>, // None: no row yet; Some(None): the first row's time is null
    last: Option<f64>,
    previous: Option<f64>,
    count: i64,
    worst: Option<f64>,
}

impl Backwards {
    fn new() -> Self {
        Backwards { first: None, last: None, previous: None, count: 0, worst: None }
    }

    fn push(&mut self, value: Option<f64>, tolerance: f64, started: bool) {
        if started {
            if let (Some(v), Some(p)) = (value, self.previous) {
                let step = v - p;
                if step < -tolerance {
                    self.count += 1;
                }
                self.worst = Some(self.worst.map_or(step, |w| w.min(step)));
            }
        } else {
            self.first = Some(value);
        }
        self.previous = value;
        self.last = value;
    }

    /// (first, last, count, worst) as polars gives them.
    fn result(&self) -> (Option<f64>, Option<f64>, i64, Option<f64>) {
        (self.first.flatten(), self.last, self.count, self.worst)
    }
}

fn smaller(current: Option<f64>, value: Option<f64>) -> Option<f64> {
    match (current, value) {
        (Some(c), Some(v)) => Some(c.min(v)),
        (c, v) => c.or(v),
    }
}

fn larger(current: Option<f64>, value: Option<f64>) -> Option<f64> {
    match (current, value) {
        (Some(c), Some(v)) => Some(c.max(v)),
        (c, v) => c.or(v),
    }
}

fn batches(frame: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    let capsule = frame.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.downcast::<PyCapsule>()?;
    // SAFETY: an Arrow PyCapsule stream; from_raw moves it out and leaves a released one for the capsule.
    let reader = unsafe { ArrowArrayStreamReader::from_raw(capsule.pointer() as *mut FFI_ArrowArrayStream) }
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    reader.collect::<Result<Vec<_>, _>>().map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A text column's values (views, strings or large strings).
fn texts<'a>(batch: &'a RecordBatch, name: &str) -> PyResult<Vec<Option<&'a str>>> {
    let column = batch.column_by_name(name).ok_or_else(|| PyValueError::new_err(format!("no column {name}")))?;
    Ok(match column.data_type() {
        DataType::Utf8View => column.as_string_view().iter().collect(),
        DataType::Utf8 => column.as_string::<i32>().iter().collect(),
        DataType::LargeUtf8 => column.as_string::<i64>().iter().collect(),
        other => return Err(PyValueError::new_err(format!("{name}: text expected, not {other}"))),
    })
}

/// A float column's values; None when one of them is NaN or infinite.
fn floats(batch: &RecordBatch, name: &str) -> PyResult<Option<Vec<Option<f64>>>> {
    let column = batch.column_by_name(name).ok_or_else(|| PyValueError::new_err(format!("no column {name}")))?;
    if column.data_type() != &DataType::Float64 {
        return Err(PyValueError::new_err(format!("{name}: Float64 expected, not {}", column.data_type())));
    }
    let values: Vec<Option<f64>> = column.as_primitive::<Float64Type>().iter().collect();
    Ok(if values.iter().flatten().all(|v| v.is_finite()) { Some(values) } else { None })
}

/// Runs in the order they first appear, each with its accumulator.
struct Runs<T> {
    index: HashMap<String, usize>,
    runs: Vec<(String, T)>,
    last: usize, // the run of the previous row: a batch holds each connection's rows together
}

impl<T> Runs<T> {
    fn new() -> Self {
        Runs { index: HashMap::new(), runs: Vec::new(), last: 0 }
    }

    fn get(&mut self, run: &str, new: impl FnOnce() -> T) -> &mut T {
        if self.runs.get(self.last).is_some_and(|(name, _)| name == run) {
            return &mut self.runs[self.last].1;
        }
        let at = match self.index.get(run) {
            Some(&at) => at,
            None => {
                self.index.insert(run.to_string(), self.runs.len());
                self.runs.push((run.to_string(), new()));
                self.runs.len() - 1
            }
        };
        self.last = at;
        &mut self.runs[at].1
    }
}

type PacketRow = (String, Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>, i64, Option<f64>);
type FrameRow = (String, Option<f64>, Option<f64>, Option<f64>, Option<f64>);
type MetricRow = (String, Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>, i64, Option<f64>);

/// packets: per run (run_id, first, last, first_sent, after, *backwards of the sent times), as
/// `add_batch`'s group_by; None if a time is not finite.
#[pyfunction]
pub fn plausibility_packets(packets: &Bound<'_, PyAny>, tolerance: f64) -> PyResult<Option<Vec<PacketRow>>> {
    struct Acc {
        span: (Option<f64>, Option<f64>),
        first_sent: Option<f64>,
        after: Option<f64>,
        sent: Backwards,
        sent_rows: usize,
    }
    let mut runs: Runs<Acc> = Runs::new();
    let batches = batches(packets)?;
    let mut columns = Vec::with_capacity(batches.len());
    for batch in &batches {
        let Some(times) = floats(batch, "time_ms")? else { return Ok(None) };
        let run_ids = texts(batch, "run_id")?;
        if run_ids.iter().any(Option::is_none) {
            return Ok(None); // polars groups null run ids its own way
        }
        columns.push((run_ids, texts(batch, "event")?, times));
    }
    let new = || Acc { span: (None, None), first_sent: None, after: None, sent: Backwards::new(), sent_rows: 0 };
    for (run_ids, events, times) in &columns {
        for ((run, event), &t) in run_ids.iter().zip(events).zip(times) {
            let acc = runs.get(run.unwrap_or_default(), new);
            acc.span = (smaller(acc.span.0, t), larger(acc.span.1, t));
            if *event == Some("sent") {
                acc.first_sent = smaller(acc.first_sent, t);
                acc.sent.push(t, tolerance, acc.sent_rows > 0);
                acc.sent_rows += 1;
            }
        }
    }
    // the first packet received at or after the run's first sent one in this batch
    for (run_ids, events, times) in &columns {
        for ((run, event), &t) in run_ids.iter().zip(events).zip(times) {
            if *event == Some("received") {
                let acc = runs.get(run.unwrap_or_default(), new);
                if let (Some(t), Some(sent)) = (t, acc.first_sent) {
                    if t >= sent {
                        acc.after = smaller(acc.after, Some(t));
                    }
                }
            }
        }
    }
    Ok(Some(
        runs.runs
            .into_iter()
            .map(|(run, a)| {
                let (first, last, count, worst) = a.sent.result();
                (run, a.span.0, a.span.1, a.first_sent, a.after, first, last, count, worst)
            })
            .collect(),
    ))
}

/// frames: per run (run_id, first, last, largest ACK delay of sent ACK frames, of received ones), and the
/// raw_frame_type of each frame of type "unknown" counted; None if a time or ACK delay is not finite.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn plausibility_frames(frames: &Bound<'_, PyAny>) -> PyResult<Option<(Vec<FrameRow>, Vec<(Option<String>, i64)>)>> {
    let mut runs: Runs<(Option<f64>, Option<f64>, Option<f64>, Option<f64>)> = Runs::new();
    let mut unknown: Runs<i64> = Runs::new();
    let mut unknown_null = 0i64;
    for batch in batches(frames)? {
        let (Some(times), Some(delays)) = (floats(&batch, "time_ms")?, floats(&batch, "ack_delay_ms")?) else {
            return Ok(None);
        };
        let (run_ids, events, types) = (texts(&batch, "run_id")?, texts(&batch, "event")?, texts(&batch, "frame_type")?);
        let raw = texts(&batch, "raw_frame_type")?;
        if run_ids.iter().any(Option::is_none) {
            return Ok(None);
        }
        for i in 0..batch.num_rows() {
            let acc = runs.get(run_ids[i].unwrap_or_default(), || (None, None, None, None));
            acc.0 = smaller(acc.0, times[i]);
            acc.1 = larger(acc.1, times[i]);
            match types[i] {
                Some("ack") if delays[i].is_some() => match events[i] {
                    Some("sent") => acc.2 = larger(acc.2, delays[i]),
                    Some("received") => acc.3 = larger(acc.3, delays[i]),
                    _ => {}
                },
                Some("unknown") => match raw[i] {
                    Some(name) => *unknown.get(name, || 0) += 1,
                    None => unknown_null += 1,
                },
                _ => {}
            }
        }
    }
    let mut counts: Vec<(Option<String>, i64)> = unknown.runs.into_iter().map(|(name, n)| (Some(name), n)).collect();
    if unknown_null > 0 {
        counts.push((None, unknown_null));
    }
    Ok(Some((runs.runs.into_iter().map(|(run, a)| (run, a.0, a.1, a.2, a.3)).collect(), counts)))
}

/// metrics_logged: per run (run_id, first, last, largest latest_rtt, min_rtt and smoothed_rtt (logged with a
/// sample) at or after the run's gate, *backwards of the times); `gates` maps a run to the object whose
/// `first_received_ms` is its gate (a run without one has none). None if a value read is not finite.
#[pyfunction]
pub fn plausibility_metrics(metrics: &Bound<'_, PyAny>, gates: &Bound<'_, PyDict>, tolerance: f64) -> PyResult<Option<Vec<MetricRow>>> {
    struct Acc {
        gate: Option<f64>,
        span: (Option<f64>, Option<f64>),
        sample: Option<f64>,
        min: Option<f64>,
        smoothed: Option<f64>,
        times: Backwards,
        rows: usize,
    }
    let mut runs: Runs<Acc> = Runs::new();
    for batch in batches(metrics)? {
        let columns = (
            floats(&batch, "time_ms")?,
            floats(&batch, "latest_rtt_ms")?,
            floats(&batch, "min_rtt_ms")?,
            floats(&batch, "smoothed_rtt_ms")?,
        );
        let (Some(times), Some(latest), Some(min_rtt), Some(smoothed)) = columns else { return Ok(None) };
        let run_ids = texts(&batch, "run_id")?;
        if run_ids.iter().any(Option::is_none) {
            return Ok(None);
        }
        for i in 0..batch.num_rows() {
            let run = run_ids[i].unwrap_or_default();
            let new = || -> PyResult<Acc> {
                let gate = match gates.get_item(run)? {
                    Some(seen) => seen.getattr("first_received_ms")?.extract::<Option<f64>>()?,
                    None => None,
                };
                Ok(Acc { gate, span: (None, None), sample: None, min: None, smoothed: None, times: Backwards::new(), rows: 0 })
            };
            let acc = match runs.index.get(run) {
                Some(&at) => &mut runs.runs[at].1,
                None => {
                    let acc = new()?;
                    runs.get(run, || acc)
                }
            };
            let t = times[i];
            acc.span = (smaller(acc.span.0, t), larger(acc.span.1, t));
            let after = matches!((t, acc.gate), (Some(t), Some(gate)) if t >= gate);
            if after {
                acc.sample = larger(acc.sample, latest[i]);
                acc.min = larger(acc.min, min_rtt[i]);
                if latest[i].unwrap_or(0.0) > 0.0 || min_rtt[i].unwrap_or(0.0) > 0.0 {
                    acc.smoothed = larger(acc.smoothed, smoothed[i]);
                }
            }
            acc.times.push(t, tolerance, acc.rows > 0);
            acc.rows += 1;
        }
    }
    Ok(Some(
        runs.runs
            .into_iter()
            .map(|(run, a)| {
                let (first, last, count, worst) = a.times.result();
                (run, a.span.0, a.span.1, a.sample, a.min, a.smoothed, first, last, count, worst)
            })
            .collect(),
    ))
}
