//! Row buffers declared once: `row_columns!` makes, from one list of a table's columns (name, Rust type, and for
//! text stored as codes the table of names), the struct of column vectors, the struct of one row, and everything
//! that goes over every column (push, truncate, append, the Arrow columns, the flat Python rows of the qlog
//! reader). The names come from the contract (`crate::contract`), the conversions from each type's `Cell`.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyList, PyLong, PyString};

use crate::arrow::Column;
use crate::contract::Dtype;

/// A value as the engines store it, and how a column of them leaves (Arrow, a flat Python list) and comes back
/// (from the Python reader's rows: only values of the column's own Python type, as polars' strict constructor
/// takes them). `names`: the names of a code column (a u8 is a code), empty for the others.
pub trait Cell: Sized {
    const DTYPE: Dtype;
    fn column(values: Vec<Self>, names: &'static [&'static str]) -> Column;
    /// The column of several parts' values, in order: by default concatenated, then `column`; the types a batch
    /// holds most of build their Arrow array in one pass instead (no concatenated copy, no `Option` per value).
    fn column_of(parts: Vec<Vec<Self>>, names: &'static [&'static str]) -> Column {
        let mut values = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for part in parts {
            values.extend(part);
        }
        Self::column(values, names)
    }
    fn append_to(&self, out: &Bound<'_, PyList>, names: &'static [&'static str]) -> PyResult<()>;
    fn from_py(value: &Bound<'_, PyAny>, names: &'static [&'static str]) -> Result<Self, ()>;
}

/// Every value of a column without nulls.
pub fn all<T>(values: Vec<T>) -> Vec<Option<T>> {
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

/// None for Python's None, else `read` of the value.
fn optional<T>(value: &Bound<'_, PyAny>, read: impl FnOnce(&Bound<'_, PyAny>) -> Result<T, ()>) -> Result<Option<T>, ()> {
    if value.is_none() {
        Ok(None)
    } else {
        read(value).map(Some)
    }
}

fn strict_float(value: &Bound<'_, PyAny>) -> Result<f64, ()> {
    if value.is_exact_instance_of::<PyFloat>() {
        value.extract().map_err(|_| ())
    } else {
        Err(())
    }
}

fn strict_int(value: &Bound<'_, PyAny>) -> Result<i64, ()> {
    int_value(value).map_err(|_| ())
}

fn strict_bool(value: &Bound<'_, PyAny>) -> Result<bool, ()> {
    if value.is_exact_instance_of::<PyBool>() {
        value.extract().map_err(|_| ())
    } else {
        Err(())
    }
}

fn strict_text(value: &Bound<'_, PyAny>) -> Result<String, ()> {
    if value.is_exact_instance_of::<PyString>() {
        value.extract().map_err(|_| ())
    } else {
        Err(())
    }
}

impl Cell for u8 {
    const DTYPE: Dtype = Dtype::Text;
    fn column(values: Vec<Self>, names: &'static [&'static str]) -> Column {
        Column::Codes(names, values)
    }
    fn append_to(&self, out: &Bound<'_, PyList>, names: &'static [&'static str]) -> PyResult<()> {
        out.append(names[*self as usize])
    }
    fn from_py(value: &Bound<'_, PyAny>, names: &'static [&'static str]) -> Result<Self, ()> {
        code_in(names, value)
    }
}

impl Cell for Option<u8> {
    const DTYPE: Dtype = Dtype::Text;
    fn column(values: Vec<Self>, names: &'static [&'static str]) -> Column {
        Column::Names(names, values)
    }
    fn append_to(&self, out: &Bound<'_, PyList>, names: &'static [&'static str]) -> PyResult<()> {
        out.append(self.map(|code| names[code as usize]))
    }
    fn from_py(value: &Bound<'_, PyAny>, names: &'static [&'static str]) -> Result<Self, ()> {
        optional(value, |value| code_in(names, value))
    }
}

/// Values and validity of several parts' optional values, in one pass.
fn optional_parts<T: Copy + Default>(parts: &[Vec<Option<T>>]) -> (Vec<T>, Option<arrow_buffer::NullBuffer>) {
    let rows = parts.iter().map(Vec::len).sum();
    let mut values = Vec::with_capacity(rows);
    let mut valid = arrow_buffer::NullBufferBuilder::new(rows);
    for value in parts.iter().flatten() {
        values.push(value.unwrap_or_default());
        match value {
            Some(_) => valid.append_non_null(),
            None => valid.append_null(),
        }
    }
    (values, valid.finish())
}

fn built(array: impl arrow_array::Array + 'static) -> Column {
    Column::Built(std::sync::Arc::new(array))
}

impl Cell for f64 {
    const DTYPE: Dtype = Dtype::Float;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Float(all(values))
    }
    fn column_of(parts: Vec<Vec<Self>>, _: &'static [&'static str]) -> Column {
        Column::DenseFloat(parts.concat())
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(*self)
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        strict_float(value)
    }
}

impl Cell for Option<f64> {
    const DTYPE: Dtype = Dtype::Float;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Float(values)
    }
    fn column_of(parts: Vec<Vec<Self>>, _: &'static [&'static str]) -> Column {
        let (values, nulls) = optional_parts(&parts);
        built(arrow_array::Float64Array::new(values.into(), nulls))
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(*self)
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        optional(value, strict_float)
    }
}

impl Cell for i64 {
    const DTYPE: Dtype = Dtype::Int;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Dense(values)
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(*self)
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        strict_int(value)
    }
}

impl Cell for Option<i64> {
    const DTYPE: Dtype = Dtype::Int;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Int(values)
    }
    fn column_of(parts: Vec<Vec<Self>>, _: &'static [&'static str]) -> Column {
        let (values, nulls) = optional_parts(&parts);
        built(arrow_array::Int64Array::new(values.into(), nulls))
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(*self)
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        optional(value, strict_int)
    }
}

/// The frame walker's unsigned values (an Int64 column: as the Python twin, a value past i64 wraps).
impl Cell for Option<u64> {
    const DTYPE: Dtype = Dtype::Int;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Unsigned(values)
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(*self)
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        optional(value, |value| value.extract().map_err(|_| ()))
    }
}

impl Cell for bool {
    const DTYPE: Dtype = Dtype::Bool;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Bool(all(values))
    }
    fn column_of(parts: Vec<Vec<Self>>, _: &'static [&'static str]) -> Column {
        built(arrow_array::BooleanArray::new(parts.iter().flatten().copied().collect(), None))
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(*self)
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        strict_bool(value)
    }
}

impl Cell for Option<bool> {
    const DTYPE: Dtype = Dtype::Bool;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Bool(values)
    }
    fn column_of(parts: Vec<Vec<Self>>, _: &'static [&'static str]) -> Column {
        let (values, nulls) = optional_parts(&parts);
        built(arrow_array::BooleanArray::new(values.iter().copied().collect(), nulls))
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(*self)
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        optional(value, strict_bool)
    }
}

impl Cell for Option<String> {
    const DTYPE: Dtype = Dtype::Text;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Text(values)
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(self.as_deref())
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        optional(value, strict_text)
    }
}

/// Text shared by many rows (a connection's name on each of its datagrams).
impl Cell for std::sync::Arc<str> {
    const DTYPE: Dtype = Dtype::Text;
    fn column(values: Vec<Self>, _: &'static [&'static str]) -> Column {
        Column::Shared(values)
    }
    fn append_to(&self, out: &Bound<'_, PyList>, _: &'static [&'static str]) -> PyResult<()> {
        out.append(&**self)
    }
    fn from_py(value: &Bound<'_, PyAny>, _: &'static [&'static str]) -> Result<Self, ()> {
        strict_text(value).map(std::sync::Arc::from)
    }
}

/// The buffers of one table's columns (`$rows`, a vector per column) and of one row (`$row`), from one list:
/// `name: Type` per column, `[NAMES]` after the type of a column held as codes of NAMES, `#[reader]` before a
/// column of the contract's table `reader` (handed to the batch assembly, in no table); then, optionally,
/// `internal { name: Type, ... }`: values kept per row that leave by no column. Columns leave in the list's
/// order, named as the contract names them.
macro_rules! row_columns {
    (@column $table:ident $field:ident) => { $crate::contract::$table::$field };
    (@column $table:ident $field:ident reader) => { $crate::contract::reader::$field };
    (@names) => { &[] };
    (@names $names:expr) => { &$names };
    (
        $(#[$doc:meta])*
        $vis:vis struct $rows:ident, row $row:ident, table $table:ident {
            $( $(#[$kind:ident])? $field:ident: $ty:ty $([$names:expr])? ),+ $(,)?
        }
        $(internal { $( $internal:ident: $internal_ty:ty ),+ $(,)? })?
    ) => {
        $(#[$doc])*
        #[derive(Default)]
        $vis struct $rows {
            $(pub $field: Vec<$ty>,)+
            $($(pub $internal: Vec<$internal_ty>,)+)?
        }

        #[doc = concat!("One row of `", stringify!($rows), "`.")]
        #[derive(Default)]
        $vis struct $row {
            $(pub $field: $ty,)+
            $($(pub $internal: $internal_ty,)+)?
        }

        $(
            const _: () = assert!(
                row_columns!(@column $table $field $($kind)?).dtype.holds(<$ty as $crate::row_columns::Cell>::DTYPE),
                concat!(stringify!($rows), ".", stringify!($field), ": not of the contract's type (quicack.schema)"),
            );
        )+

        #[allow(dead_code)]
        impl $rows {
            /// The columns, as the contract names them, in order.
            pub const NAMES: &'static [&'static str] = &[$(row_columns!(@column $table $field $($kind)?).name),+];
            /// Values of a row in a flat Python list.
            pub const WIDTH: usize = Self::NAMES.len();

            pub fn push(&mut self, row: $row) {
                $(self.$field.push(row.$field);)+
                $($(self.$internal.push(row.$internal);)+)?
            }

            pub fn truncate(&mut self, length: usize) {
                $(self.$field.truncate(length);)+
                $($(self.$internal.truncate(length);)+)?
            }

            /// `other`'s rows after these.
            pub fn append(&mut self, mut other: Self) {
                $(self.$field.append(&mut other.$field);)+
                $($(self.$internal.append(&mut other.$internal);)+)?
            }

            /// `front`'s rows before these.
            pub fn prepend(&mut self, mut front: Self) {
                $(
                    front.$field.append(&mut self.$field);
                    self.$field = front.$field;
                )+
                $($(
                    front.$internal.append(&mut self.$internal);
                    self.$internal = front.$internal;
                )+)?
            }

            /// The columns for an `ArrowTable`, named as the contract names them.
            pub fn into_arrow(self) -> Vec<(String, $crate::arrow::Column)> {
                vec![$((
                    row_columns!(@column $table $field $($kind)?).name.to_string(),
                    <$ty as $crate::row_columns::Cell>::column(self.$field, row_columns!(@names $($names)?)),
                ),)+]
            }

            /// The columns of several parts' rows, in order, for an `ArrowTable` (`Cell::column_of`: one pass per
            /// column where the type allows).
            pub fn into_arrow_of(mut parts: Vec<Self>) -> Vec<(String, $crate::arrow::Column)> {
                vec![$((
                    row_columns!(@column $table $field $($kind)?).name.to_string(),
                    <$ty as $crate::row_columns::Cell>::column_of(
                        parts.iter_mut().map(|part| std::mem::take(&mut part.$field)).collect(),
                        row_columns!(@names $($names)?),
                    ),
                ),)+]
            }

            /// The columns for an `ArrowTable` (copies: the rows stay).
            pub fn to_arrow(&self) -> Vec<(String, $crate::arrow::Column)> {
                vec![$((
                    row_columns!(@column $table $field $($kind)?).name.to_string(),
                    <$ty as $crate::row_columns::Cell>::column(self.$field.clone(), row_columns!(@names $($names)?)),
                ),)+]
            }

            /// Row `row`'s values appended to a flat Python list, in the columns' order.
            pub fn append_python(&self, row: usize, out: &pyo3::Bound<'_, pyo3::types::PyList>) -> pyo3::PyResult<()> {
                $($crate::row_columns::Cell::append_to(&self.$field[row], out, row_columns!(@names $($names)?))?;)+
                Ok(())
            }

            /// A row from its values in a flat Python list (WIDTH of them), if each is of its column's own type.
            pub fn push_python(&mut self, values: &[pyo3::Bound<'_, pyo3::PyAny>]) -> Result<(), ()> {
                let mut values = values.iter();
                let row = $row {
                    $($field: <$ty as $crate::row_columns::Cell>::from_py(
                        values.next().ok_or(())?,
                        row_columns!(@names $($names)?),
                    )?,)+
                    $($($internal: Default::default(),)+)?
                };
                self.push(row);
                Ok(())
            }
        }
    };
}
