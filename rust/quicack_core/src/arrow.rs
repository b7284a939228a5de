//! Columns handed to polars through the Arrow C data interface (the PyCapsule protocol `__arrow_c_array__`):
//! a table is one struct array whose children are the columns, so `pl.DataFrame(table)` takes the buffers
//! without a Python object per value and without pyarrow. The arrays are arrow-rs's (arrow-array), exported
//! through its C data interface (`arrow_array::ffi`).

use std::ffi::CString;
use std::sync::Arc;

use arrow_array::ffi::to_ffi;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, StringArray, StringViewArray, StructArray,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::contract::Dtype;

pub enum Column {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Text(Vec<Option<String>>),
    TextList(Vec<Option<Vec<String>>>),
    /// Text by code: row i is names[codes[i]] (null for None), built without a string per row.
    Names(&'static [&'static str], Vec<Option<u8>>),
    Shared(Vec<Arc<str>>),
    // The same types built without a 16-byte Option per row (most of the export's time went into those):
    /// Int64 without nulls
    Dense(Vec<i64>),
    /// Int64 from unsigned values (the frame walker's), null for None
    Unsigned(Vec<Option<u64>>),
    /// Int64 or Float64 of `length` rows, null but at the rows given (ECN counts, ACK_FREQUENCY fields)
    SparseInt(usize, Vec<(usize, u64)>),
    SparseFloat(usize, Vec<(usize, f64)>),
    /// Text by code without nulls
    Codes(&'static [&'static str], Vec<u8>),
    /// List of {low: Int64, high: Int64} structs (frames.ack_ranges): each row's end in `pairs` (Arrow list
    /// offsets without the leading 0), whether the row is a list (else null), the pairs
    Ranges(Vec<i32>, Vec<bool>, Vec<(i64, i64)>),
    // Text as Arrow string views (Utf8View), which polars takes without converting (it converts Utf8 to its
    // views value by value):
    /// `Codes` as views
    CodeViews(&'static [&'static str], Vec<u8>),
    /// `Names` as views
    NameViews(&'static [&'static str], Vec<Option<u8>>),
    /// `Text` as views
    TextViews(Vec<Option<String>>),
    /// Each value (None: null) repeated its count of rows, as views of the value stored once (a connection's
    /// name on each of its rows)
    RepeatedViews(Vec<Option<String>>, Vec<usize>),
    /// Float64 without nulls
    DenseFloat(Vec<f64>),
    /// An array built already (in one pass over the rows of several connections, `Cell::column_of`)
    Built(ArrayRef),
    /// `length` nulls of a contract column's type (a column the reader cannot fill, as `Table.conform` adds it)
    Nulls(Dtype, usize),
}

/// The Arrow type a column of the contract's type leaves as (text as views, which polars takes as they are).
fn contract_type(dtype: Dtype) -> DataType {
    match dtype {
        Dtype::Text => DataType::Utf8View,
        Dtype::Int => DataType::Int64,
        Dtype::Float => DataType::Float64,
        Dtype::Bool => DataType::Boolean,
        Dtype::TextList => DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        Dtype::AckRanges => DataType::List(Arc::new(ranges_item())),
    }
}

/// Arrow's view of a string (Utf8View layout: the length, then the bytes themselves up to 12 of them, else their
/// first 4, the buffer's index (0 here) and the offset in it).
fn string_view(text: &[u8], offset: usize) -> u128 {
    let mut view = [0u8; 16];
    view[..4].copy_from_slice(&(text.len() as u32).to_le_bytes());
    if text.len() <= 12 {
        view[4..4 + text.len()].copy_from_slice(text);
    } else {
        view[4..8].copy_from_slice(&text[..4]);
        view[12..].copy_from_slice(&(offset as u32).to_le_bytes());
    }
    u128::from_le_bytes(view)
}

/// Views of `texts` (None: null) over one buffer holding the texts longer than 12 bytes.
fn string_views<'a>(length: usize, texts: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    let mut views = Vec::with_capacity(length);
    let mut valid = Vec::with_capacity(length);
    let mut data: Vec<u8> = Vec::new();
    for text in texts {
        valid.push(text.is_some());
        views.push(match text {
            None => 0,
            Some(text) => {
                let view = string_view(text.as_bytes(), data.len());
                if text.len() > 12 {
                    data.extend_from_slice(text.as_bytes());
                }
                view
            }
        });
    }
    whole_views(views, data, valid)
}

/// The string-view array of `views` (built by `string_view`) over `data`. Built unchecked: `try_new` validated
/// every view again (bounds and UTF-8 of what `string_view` was just given as `&str`), ≈ 3 % of a qlog ingest's
/// CPU (bench/README.md, issue 37).
fn whole_views(views: Vec<u128>, data: Vec<u8>, valid: Vec<bool>) -> ArrayRef {
    // the views' offsets are u32: beyond that `string_view` would have cut them (never near a batch's size)
    assert!(data.len() <= u32::MAX as usize, "string views over more than 4 GiB");
    let buffers = if data.is_empty() { vec![] } else { vec![Buffer::from_vec(data)] };
    // SAFETY: every view comes from `string_view` of a whole `&str` (valid UTF-8), stored inline when it is at
    // most 12 bytes long, else appended to `data` (buffer 0) at the offset the view records; null rows are 0.
    Arc::new(unsafe { StringViewArray::new_unchecked(ScalarBuffer::from(views), buffers, nulls(valid)) })
}

/// Views of `names[code]` per row (None: null), the names stored once.
fn code_views<N: AsRef<str>>(names: &[N], length: usize, codes: impl Iterator<Item = Option<usize>>) -> ArrayRef {
    let mut data: Vec<u8> = Vec::new();
    let mut of_name = Vec::with_capacity(names.len());
    for name in names {
        let name = name.as_ref();
        of_name.push(string_view(name.as_bytes(), data.len()));
        if name.len() > 12 {
            data.extend_from_slice(name.as_bytes());
        }
    }
    let mut views = Vec::with_capacity(length);
    let mut valid = Vec::with_capacity(length);
    for code in codes {
        valid.push(code.is_some());
        views.push(code.map_or(0, |code| of_name[code]));
    }
    whole_views(views, data, valid)
}

/// Validity from per-row flags; none when every row is valid.
fn nulls(valid: Vec<bool>) -> Option<NullBuffer> {
    Some(NullBuffer::from(valid)).filter(|nulls| nulls.null_count() > 0)
}

/// `length` rows, null but at `entries` (a row given twice: the last value).
fn sparse<T: arrow_buffer::ArrowNativeType>(length: usize, entries: &[(usize, T)]) -> (ScalarBuffer<T>, Option<NullBuffer>) {
    let mut data = vec![T::default(); length];
    let mut valid = vec![false; length];
    for &(row, value) in entries {
        data[row] = value;
        valid[row] = true;
    }
    (ScalarBuffer::from(data), nulls(valid))
}

fn ranges_item() -> Field {
    let pair = Fields::from(vec![Field::new("low", DataType::Int64, true), Field::new("high", DataType::Int64, true)]);
    Field::new("item", DataType::Struct(pair), true)
}

pub(crate) fn column_array(column: Column) -> ArrayRef {
    match column {
        Column::Int(values) => Arc::new(Int64Array::from(values)),
        Column::Float(values) => Arc::new(Float64Array::from(values)),
        Column::Bool(values) => Arc::new(BooleanArray::from(values)),
        Column::Text(values) => Arc::new(values.iter().map(Option::as_deref).collect::<StringArray>()),
        Column::Names(names, codes) => {
            Arc::new(codes.iter().map(|code| code.map(|code| names[code as usize])).collect::<StringArray>())
        }
        Column::Shared(values) => Arc::new(StringArray::from_iter_values(values.iter().map(|value| &**value))),
        Column::Dense(values) => Arc::new(Int64Array::new(ScalarBuffer::from(values), None)),
        Column::Unsigned(values) => Arc::new(values.into_iter().map(|v| v.map(|v| v as i64)).collect::<Int64Array>()),
        Column::SparseInt(length, entries) => {
            let entries: Vec<(usize, i64)> = entries.into_iter().map(|(row, value)| (row, value as i64)).collect();
            let (values, nulls) = sparse(length, &entries);
            Arc::new(Int64Array::new(values, nulls))
        }
        Column::SparseFloat(length, entries) => {
            let (values, nulls) = sparse(length, &entries);
            Arc::new(Float64Array::new(values, nulls))
        }
        Column::Codes(names, codes) => {
            Arc::new(StringArray::from_iter_values(codes.iter().map(|code| names[*code as usize])))
        }
        Column::Ranges(ends, valid, pairs) => {
            let mut offsets = Vec::with_capacity(ends.len() + 1);
            offsets.push(0i32);
            offsets.extend(ends);
            let (lows, highs): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
            let DataType::Struct(fields) = ranges_item().data_type().clone() else { unreachable!() };
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::new(ScalarBuffer::from(lows), None)),
                Arc::new(Int64Array::new(ScalarBuffer::from(highs), None)),
            ];
            let items = StructArray::new(fields, columns, None);
            let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
            Arc::new(ListArray::new(Arc::new(ranges_item()), offsets, Arc::new(items), nulls(valid)))
        }
        Column::CodeViews(names, codes) => code_views(names, codes.len(), codes.iter().map(|c| Some(*c as usize))),
        Column::NameViews(names, codes) => code_views(names, codes.len(), codes.iter().map(|c| c.map(usize::from))),
        Column::RepeatedViews(values, counts) => {
            let rows = counts.iter().sum();
            let names: Vec<&str> = values.iter().map(|v| v.as_deref().unwrap_or_default()).collect();
            let codes = counts.iter().enumerate().flat_map(|(i, &n)| std::iter::repeat_n(values[i].as_ref().map(|_| i), n));
            code_views(&names, rows, codes)
        }
        Column::DenseFloat(values) => Arc::new(Float64Array::new(ScalarBuffer::from(values), None)),
        Column::Built(array) => array,
        Column::Nulls(dtype, length) => arrow_array::new_null_array(&contract_type(dtype), length),
        Column::TextViews(values) => string_views(values.len(), values.iter().map(Option::as_deref)),
        Column::TextList(values) => {
            let mut offsets: Vec<i32> = Vec::with_capacity(values.len() + 1);
            let mut valid = Vec::with_capacity(values.len());
            let mut items: Vec<String> = Vec::new();
            offsets.push(0);
            for value in values {
                valid.push(value.is_some());
                items.extend(value.unwrap_or_default());
                offsets.push(items.len() as i32);
            }
            let items = StringArray::from_iter_values(items);
            let item = Arc::new(Field::new("item", DataType::Utf8, true));
            Arc::new(ListArray::new(item, OffsetBuffer::new(ScalarBuffer::from(offsets)), Arc::new(items), nulls(valid)))
        }
    }
}

/// A table as one Arrow struct array, exported through `__arrow_c_array__`.
#[pyclass(module = "quicack_core", name = "ArrowTable")]
pub struct ArrowTable {
    columns: Option<Vec<(String, Column)>>,
    length: usize,
}

impl ArrowTable {
    pub fn new(columns: Vec<(String, Column)>, length: usize) -> Self {
        ArrowTable { columns: Some(columns), length }
    }

    /// The table as one struct array (taken out: a table is exported once).
    fn take_struct(&mut self) -> PyResult<StructArray> {
        let columns = self
            .columns
            .take()
            .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("an ArrowTable is exported once"))?;
        let mut fields = Vec::with_capacity(columns.len());
        let mut arrays = Vec::with_capacity(columns.len());
        for (name, column) in columns {
            let array = column_array(column);
            fields.push(Field::new(name, array.data_type().clone(), true));
            arrays.push(array);
        }
        let table = StructArray::try_new_with_length(Fields::from(fields), arrays, None, self.length)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        Ok(table)
    }
}

#[pymethods]
impl ArrowTable {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &mut self,
        py: Python<'py>,
        requested_schema: Option<PyObject>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        let data = self.take_struct()?.into_data();
        let (array, schema) = to_ffi(&data).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        // The consumer moves the structs out (and marks them released); what it leaves is dropped here.
        let schema_capsule = PyCapsule::new_bound(py, schema, Some(CString::new("arrow_schema").expect("no NUL")))?;
        let array_capsule = PyCapsule::new_bound(py, array, Some(CString::new("arrow_array").expect("no NUL")))?;
        Ok((schema_capsule, array_capsule))
    }
}

#[cfg(test)]
#[path = "tests/arrow.rs"]
mod tests;
