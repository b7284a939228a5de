//! Columns handed to polars through the Arrow C data interface (the PyCapsule protocol `__arrow_c_array__`):
//! a table is one struct array whose children are the columns, so `pl.DataFrame(table)` takes the buffers
//! without a Python object per value and without pyarrow.

use std::ffi::{c_char, c_void, CString};
use std::ptr;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

#[repr(C)]
pub struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

// The capsules move between threads only under the GIL, as the protocol expects.
unsafe impl Send for ArrowSchema {}
unsafe impl Send for ArrowArray {}

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
}

impl Column {
    fn format(&self) -> &'static str {
        match self {
            Column::Int(_) | Column::Dense(_) | Column::Unsigned(_) | Column::SparseInt(..) => "l",
            Column::Float(_) | Column::SparseFloat(..) => "g",
            Column::Bool(_) => "b",
            Column::Text(_) | Column::Names(..) | Column::Shared(_) | Column::Codes(..) => "u",
            Column::TextList(_) | Column::Ranges(..) => "+l",
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::Int(values) => values.len(),
            Column::Float(values) => values.len(),
            Column::Bool(values) => values.len(),
            Column::Text(values) => values.len(),
            Column::TextList(values) => values.len(),
            Column::Names(_, codes) => codes.len(),
            Column::Shared(values) => values.len(),
            Column::Dense(values) => values.len(),
            Column::Unsigned(values) => values.len(),
            Column::SparseInt(length, _) | Column::SparseFloat(length, _) => *length,
            Column::Codes(_, codes) => codes.len(),
            Column::Ranges(ends, ..) => ends.len(),
        }
    }
}

fn bits(values: impl Iterator<Item = bool>, length: usize) -> Vec<u8> {
    let mut out = vec![0u8; length.div_ceil(8).max(1)];
    for (index, value) in values.enumerate() {
        if value {
            out[index / 8] |= 1 << (index % 8);
        }
    }
    out
}

struct SchemaPrivate {
    _format: CString,
    _name: CString,
    children: Vec<*mut ArrowSchema>,
}

struct ArrayPrivate {
    _buffers: Vec<Vec<u8>>,
    buffer_pointers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
}

/// The release callbacks of the C data interface: free the private data and the children, mark released.
macro_rules! release_function {
    ($name:ident, $struct:ty, $private:ty) => {
        unsafe extern "C" fn $name(this: *mut $struct) {
            let this = &mut *this;
            if !this.private_data.is_null() {
                let private = Box::from_raw(this.private_data as *mut $private);
                for child in &private.children {
                    if let Some(release) = (**child).release {
                        release(*child);
                    }
                    drop(Box::from_raw(*child));
                }
            }
            this.private_data = ptr::null_mut();
            this.release = None;
        }
    };
}

release_function!(release_schema, ArrowSchema, SchemaPrivate);
release_function!(release_array, ArrowArray, ArrayPrivate);

fn schema(format: &str, name: &str, children: Vec<*mut ArrowSchema>) -> ArrowSchema {
    let format = CString::new(format).expect("no NUL");
    let name = CString::new(name).expect("no NUL");
    let mut private = Box::new(SchemaPrivate { _format: format, _name: name, children });
    let out = ArrowSchema {
        format: private._format.as_ptr(),
        name: private._name.as_ptr(),
        metadata: ptr::null(),
        flags: 2, // nullable
        n_children: private.children.len() as i64,
        children: if private.children.is_empty() { ptr::null_mut() } else { private.children.as_mut_ptr() },
        dictionary: ptr::null_mut(),
        release: Some(release_schema),
        private_data: ptr::null_mut(),
    };
    ArrowSchema { private_data: Box::into_raw(private) as *mut c_void, ..out }
}

fn array(length: usize, null_count: usize, buffers: Vec<Option<Vec<u8>>>, children: Vec<*mut ArrowArray>) -> ArrowArray {
    let pointers: Vec<*const c_void> =
        buffers.iter().map(|b| b.as_ref().map_or(ptr::null(), |b| b.as_ptr() as *const c_void)).collect();
    let owned: Vec<Vec<u8>> = buffers.into_iter().flatten().collect();
    let mut private = Box::new(ArrayPrivate { _buffers: owned, buffer_pointers: pointers, children });
    let out = ArrowArray {
        length: length as i64,
        null_count: null_count as i64,
        offset: 0,
        n_buffers: private.buffer_pointers.len() as i64,
        n_children: private.children.len() as i64,
        buffers: private.buffer_pointers.as_mut_ptr(),
        children: if private.children.is_empty() { ptr::null_mut() } else { private.children.as_mut_ptr() },
        dictionary: ptr::null_mut(),
        release: Some(release_array),
        private_data: ptr::null_mut(),
    };
    ArrowArray { private_data: Box::into_raw(private) as *mut c_void, ..out }
}

fn validity<T>(values: &[Option<T>]) -> (Option<Vec<u8>>, usize) {
    let nulls = values.iter().filter(|v| v.is_none()).count();
    if nulls == 0 {
        (None, 0)
    } else {
        (Some(bits(values.iter().map(Option::is_some), values.len())), nulls)
    }
}

/// Values and validity bits in one pass; no validity buffer when nothing is null.
fn optional_array<T: Copy + Default>(length: usize, values: impl Iterator<Item = Option<T>>) -> ArrowArray {
    let mut data: Vec<T> = Vec::with_capacity(length);
    let mut valid = vec![0u8; length.div_ceil(8).max(1)];
    let mut nulls = 0;
    for (index, value) in values.enumerate() {
        match value {
            Some(value) => {
                valid[index / 8] |= 1 << (index % 8);
                data.push(value);
            }
            None => {
                nulls += 1;
                data.push(T::default());
            }
        }
    }
    array(length, nulls, vec![(nulls > 0).then_some(valid), Some(as_bytes(data))], Vec::new())
}

/// `length` rows, null but at `entries` (a row given twice: the last value).
fn sparse_array<T: Copy + Default>(length: usize, entries: &[(usize, T)]) -> ArrowArray {
    let mut data = vec![T::default(); length];
    let mut valid = vec![0u8; length.div_ceil(8).max(1)];
    let mut nulls = length;
    for &(row, value) in entries {
        data[row] = value;
        if valid[row / 8] & (1 << (row % 8)) == 0 {
            valid[row / 8] |= 1 << (row % 8);
            nulls -= 1;
        }
    }
    array(length, nulls, vec![(nulls > 0).then_some(valid), Some(as_bytes(data))], Vec::new())
}

fn as_bytes<T: Copy>(values: Vec<T>) -> Vec<u8> {
    let size = std::mem::size_of::<T>() * values.len();
    let mut out = vec![0u8; size.max(8)];
    // SAFETY: plain numbers copied byte for byte; `out` is at least as long.
    unsafe { ptr::copy_nonoverlapping(values.as_ptr() as *const u8, out.as_mut_ptr(), size) };
    out
}

fn text_array<'a>(
    length: usize,
    valid: Option<Vec<u8>>,
    nulls: usize,
    values: impl Iterator<Item = Option<&'a str>>,
) -> ArrowArray {
    let mut offsets: Vec<i32> = Vec::with_capacity(length + 1);
    let mut data: Vec<u8> = Vec::new();
    offsets.push(0);
    for value in values {
        if let Some(text) = value {
            data.extend_from_slice(text.as_bytes());
        }
        offsets.push(data.len() as i32);
    }
    if data.is_empty() {
        data.push(0);
    }
    array(length, nulls, vec![valid, Some(as_bytes(offsets)), Some(data)], Vec::new())
}

fn column_array(column: Column) -> ArrowArray {
    let length = column.len();
    match column {
        Column::Int(values) => {
            let (valid, nulls) = validity(&values);
            let data: Vec<i64> = values.into_iter().map(|v| v.unwrap_or(0)).collect();
            array(length, nulls, vec![valid, Some(as_bytes(data))], Vec::new())
        }
        Column::Float(values) => {
            let (valid, nulls) = validity(&values);
            let data: Vec<f64> = values.into_iter().map(|v| v.unwrap_or(0.0)).collect();
            array(length, nulls, vec![valid, Some(as_bytes(data))], Vec::new())
        }
        Column::Bool(values) => {
            let (valid, nulls) = validity(&values);
            let data = bits(values.iter().map(|v| v.unwrap_or(false)), length);
            array(length, nulls, vec![valid, Some(data)], Vec::new())
        }
        Column::Text(values) => {
            let (valid, nulls) = validity(&values);
            text_array(length, valid, nulls, values.iter().map(|value| value.as_deref()))
        }
        Column::Names(names, codes) => {
            let (valid, nulls) = validity(&codes);
            text_array(length, valid, nulls, codes.iter().map(|code| code.map(|code| names[code as usize])))
        }
        Column::Shared(values) => text_array(length, None, 0, values.iter().map(|value| Some(&**value))),
        Column::Dense(values) => array(length, 0, vec![None, Some(as_bytes(values))], Vec::new()),
        Column::Unsigned(values) => optional_array(length, values.into_iter().map(|v| v.map(|v| v as i64))),
        Column::SparseInt(_, entries) => {
            let entries: Vec<(usize, i64)> = entries.into_iter().map(|(row, value)| (row, value as i64)).collect();
            sparse_array(length, &entries)
        }
        Column::SparseFloat(_, entries) => sparse_array(length, &entries),
        Column::Ranges(ends, valid, pairs) => {
            let nulls = valid.iter().filter(|valid| !**valid).count();
            let validity = (nulls > 0).then(|| bits(valid.iter().copied(), length));
            let mut offsets = Vec::with_capacity(length + 1);
            offsets.push(0i32);
            offsets.extend(ends);
            let (lows, highs): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
            let count = lows.len();
            let low = Box::into_raw(Box::new(column_array(Column::Dense(lows))));
            let high = Box::into_raw(Box::new(column_array(Column::Dense(highs))));
            let item = Box::into_raw(Box::new(array(count, 0, vec![None], vec![low, high])));
            array(length, nulls, vec![validity, Some(as_bytes(offsets))], vec![item])
        }
        Column::Codes(names, codes) => text_array(length, None, 0, codes.iter().map(|code| Some(names[*code as usize]))),
        Column::TextList(values) => {
            let (valid, nulls) = validity(&values);
            let mut offsets: Vec<i32> = Vec::with_capacity(length + 1);
            let mut items: Vec<Option<String>> = Vec::new();
            offsets.push(0);
            for value in values.into_iter() {
                if let Some(names) = value {
                    items.extend(names.into_iter().map(Some));
                }
                offsets.push(items.len() as i32);
            }
            let child = Box::into_raw(Box::new(column_array(Column::Text(items))));
            array(length, nulls, vec![valid, Some(as_bytes(offsets))], vec![child])
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
        let columns = self
            .columns
            .take()
            .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("an ArrowTable is exported once"))?;
        let mut child_schemas = Vec::new();
        let mut child_arrays = Vec::new();
        for (name, column) in columns {
            let grandchildren = match column {
                Column::TextList(_) => vec![Box::into_raw(Box::new(schema("u", "item", Vec::new())))],
                Column::Ranges(..) => {
                    let fields = ["low", "high"].map(|name| Box::into_raw(Box::new(schema("l", name, Vec::new()))));
                    vec![Box::into_raw(Box::new(schema("+s", "item", fields.to_vec())))]
                }
                _ => Vec::new(),
            };
            child_schemas.push(Box::into_raw(Box::new(schema(column.format(), &name, grandchildren))));
            child_arrays.push(Box::into_raw(Box::new(column_array(column))));
        }
        let top_schema = schema("+s", "", child_schemas);
        let top_array = array(self.length, 0, vec![None], child_arrays);
        let schema_name = CString::new("arrow_schema").expect("no NUL");
        let array_name = CString::new("arrow_array").expect("no NUL");
        let schema_capsule = PyCapsule::new_bound_with_destructor(py, top_schema, Some(schema_name), |mut s, _| {
            if let Some(release) = s.release {
                unsafe { release(&mut s) };
            }
        })?;
        let array_capsule = PyCapsule::new_bound_with_destructor(py, top_array, Some(array_name), |mut a, _| {
            if let Some(release) = a.release {
                unsafe { release(&mut a) };
            }
        })?;
        Ok((schema_capsule, array_capsule))
    }
}
