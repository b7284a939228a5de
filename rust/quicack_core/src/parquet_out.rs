//! `ParquetFileWriter`: the compiled backend of `quicack.storage.parquet_store.TableWriter`'s appending writer.
//!
//! It takes polars frames through the Arrow C stream interface (`__arrow_c_stream__`, no copy) and encodes them
//! with the `parquet` crate, with the settings pyarrow's `ParquetWriter` was given there: zstd at the given level,
//! dictionary encoding for the top-level text columns only, column-chunk statistics, pyarrow's default of at most
//! 1,048,576 rows per row group and a row group ended by `flush`. The columns are stored as pyarrow stored
//! `to_arrow()`'s (large strings, large lists with "element" items), so a file reads back as one of pyarrow's
//! did. Measured against pyarrow's writer (bench/README.md, issue 37): the frames no longer cross polars →
//! pyarrow (`to_arrow`) nor wait to be concatenated into one table per row group.

use std::fs::File;
use std::sync::Arc;

use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{Array, ArrayRef, LargeListArray, LargeStringArray, ListArray, RecordBatch, StringArray, StringViewArray, StructArray};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// pyarrow's default largest row group (`ParquetWriter.write_table`'s row_group_size when not given).
const MAX_ROW_GROUP_ROWS: usize = 1024 * 1024;

fn value_error(error: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// The type a column is stored as: text as large strings, lists as large lists of "element" items (what
/// polars' `to_arrow()` gives and pyarrow's compliant nested types name the item), the rest as it is.
fn stored_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Utf8View | DataType::Utf8 => DataType::LargeUtf8,
        DataType::List(item) | DataType::LargeList(item) => DataType::LargeList(Arc::new(stored_field(item, "element"))),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(|f| stored_field(f, f.name())).collect::<Fields>()),
        other => other.clone(),
    }
}

fn stored_field(field: &FieldRef, name: &str) -> Field {
    Field::new(name, stored_type(field.data_type()), field.is_nullable())
}

fn large_strings<'a>(length: usize, values: impl Iterator<Item = Option<&'a str>>, nulls: Option<&arrow_buffer::NullBuffer>) -> ArrayRef {
    let mut offsets = Vec::with_capacity(length + 1);
    offsets.push(0i64);
    let mut bytes: Vec<u8> = Vec::new();
    for value in values {
        if let Some(text) = value {
            bytes.extend_from_slice(text.as_bytes());
        }
        offsets.push(bytes.len() as i64);
    }
    Arc::new(LargeStringArray::new(OffsetBuffer::new(ScalarBuffer::from(offsets)), Buffer::from_vec(bytes), nulls.cloned()))
}

/// `array` as `stored_type` stores it (values copied only where the layout changes: text views, 32-bit offsets).
fn stored_array(array: &ArrayRef, stored: &DataType) -> Result<ArrayRef, String> {
    if array.data_type() == stored {
        return Ok(array.clone());
    }
    let any = array.as_any();
    match stored {
        DataType::LargeUtf8 => {
            if let Some(views) = any.downcast_ref::<StringViewArray>() {
                return Ok(large_strings(views.len(), views.iter(), views.nulls()));
            }
            if let Some(texts) = any.downcast_ref::<StringArray>() {
                return Ok(large_strings(texts.len(), texts.iter(), texts.nulls()));
            }
        }
        DataType::LargeList(item) => {
            if let Some(list) = any.downcast_ref::<LargeListArray>() {
                let values = stored_array(list.values(), item.data_type())?;
                return Ok(Arc::new(LargeListArray::new(item.clone(), list.offsets().clone(), values, list.nulls().cloned())));
            }
            if let Some(list) = any.downcast_ref::<ListArray>() {
                let values = stored_array(list.values(), item.data_type())?;
                let offsets: Vec<i64> = list.offsets().iter().map(|&o| o as i64).collect();
                return Ok(Arc::new(LargeListArray::new(item.clone(), OffsetBuffer::new(ScalarBuffer::from(offsets)), values, list.nulls().cloned())));
            }
        }
        DataType::Struct(fields) => {
            if let Some(table) = any.downcast_ref::<StructArray>() {
                let columns = table
                    .columns()
                    .iter()
                    .zip(fields.iter())
                    .map(|(column, field)| stored_array(column, field.data_type()))
                    .collect::<Result<Vec<_>, _>>()?;
                return Ok(Arc::new(StructArray::try_new(fields.clone(), columns, table.nulls().cloned()).map_err(|e| e.to_string())?));
            }
        }
        _ => {}
    }
    Err(format!("a column of type {} cannot be stored as {stored}", array.data_type()))
}

/// The writer's properties: TableWriter's pyarrow settings (see the module comment).
fn properties(schema: &Schema, compression_level: i32) -> PyResult<WriterProperties> {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(compression_level).map_err(value_error)?))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_statistics_truncate_length(None)
        .set_max_row_group_row_count(Some(MAX_ROW_GROUP_ROWS))
        .set_dictionary_enabled(false);
    for field in schema.fields() {
        if field.data_type() == &DataType::LargeUtf8 {
            builder = builder.set_column_dictionary_enabled(ColumnPath::from(field.name().as_str()), true);
        }
    }
    Ok(builder.build())
}

/// One Parquet file written from frames in order; `flush` ends a row group.
#[pyclass(module = "quicack_core", name = "ParquetFileWriter")]
pub struct ParquetFileWriter {
    path: String,
    compression_level: i32,
    schema: Option<SchemaRef>,
    writer: Option<ArrowWriter<File>>,
    closed: bool,
}

impl ParquetFileWriter {
    fn write_batch(&mut self, batch: RecordBatch) -> PyResult<()> {
        let schema = match &self.schema {
            Some(schema) => schema.clone(),
            None => {
                let fields: Vec<Field> = batch.schema().fields().iter().map(|f| stored_field(f, f.name())).collect();
                let schema = Arc::new(Schema::new(fields));
                let file = File::create(&self.path).map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", self.path)))?;
                let writer = ArrowWriter::try_new(file, schema.clone(), Some(properties(&schema, self.compression_level)?))
                    .map_err(value_error)?;
                self.writer = Some(writer);
                self.schema = Some(schema.clone());
                schema
            }
        };
        if batch.num_columns() != schema.fields().len() {
            return Err(value_error(format!("{} columns where the file has {}", batch.num_columns(), schema.fields().len())));
        }
        let columns = batch
            .columns()
            .iter()
            .zip(schema.fields().iter())
            .map(|(column, field)| stored_array(column, field.data_type()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(value_error)?;
        let stored = RecordBatch::try_new(schema, columns).map_err(value_error)?;
        self.open()?.write(&stored).map_err(value_error)
    }

    fn open(&mut self) -> PyResult<&mut ArrowWriter<File>> {
        self.writer.as_mut().ok_or_else(|| PyRuntimeError::new_err("the Parquet file is closed"))
    }
}

#[pymethods]
impl ParquetFileWriter {
    /// A writer of `path` (created at the first frame); `compression_level`: zstd's.
    #[new]
    fn new(path: String, compression_level: i32) -> Self {
        ParquetFileWriter { path, compression_level, schema: None, writer: None, closed: false }
    }

    /// Append the rows of `frame` (anything with `__arrow_c_stream__`, a polars DataFrame) to the open row group.
    fn write(&mut self, py: Python<'_>, frame: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.closed {
            return Err(PyRuntimeError::new_err("the Parquet file is closed"));
        }
        let capsule = frame.call_method0("__arrow_c_stream__")?;
        let capsule = capsule.downcast::<PyCapsule>()?;
        // SAFETY: the capsule holds an FFI_ArrowArrayStream (the Arrow PyCapsule interface); from_raw moves it out
        // and leaves a released stream behind, which the capsule's destructor then ignores.
        let reader = unsafe { ArrowArrayStreamReader::from_raw(capsule.pointer() as *mut FFI_ArrowArrayStream) }.map_err(value_error)?;
        for batch in reader {
            let batch = batch.map_err(value_error)?;
            py.allow_threads(|| self.write_batch(batch))?;
        }
        Ok(())
    }

    /// End the open row group (nothing if no rows are waiting).
    fn flush(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.writer.as_mut() {
            Some(writer) => py.allow_threads(|| writer.flush()).map_err(value_error),
            None => Ok(()),
        }
    }

    /// Write the footer and close the file (a file that never got a frame is not created).
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        self.closed = true;
        match self.writer.take() {
            Some(writer) => py.allow_threads(|| writer.close()).map(|_| ()).map_err(value_error),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "tests/parquet_out.rs"]
mod tests;
