//! `ParquetFileWriter`: the compiled backend of `quicack.storage.parquet_store.TableWriter`'s appending writer.
//!
//! It takes polars frames through the Arrow C stream interface (`__arrow_c_stream__`, no copy) and encodes them
//! with the `parquet` crate, with the settings pyarrow's `ParquetWriter` was given there: zstd at the given level,
//! dictionary encoding for the top-level text columns only, column-chunk statistics, pyarrow's default of at most
//! 1,048,576 rows per row group and a row group ended by `flush`. The file records the Arrow types pyarrow
//! recorded for `to_arrow()`'s columns (large strings, large lists of "element" items), so it reads back as one of
//! pyarrow's did; the text is encoded from polars' string views as it is (a Parquet string is the same bytes). Measured against pyarrow's writer (bench/README.md, issue 37): the frames no longer cross polars →
//! pyarrow (`to_arrow`) nor wait to be concatenated into one table per row group.

use std::fs::File;
use std::sync::Arc;

use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{Array, ArrayRef, LargeListArray, ListArray, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use parquet::arrow::add_encoded_arrow_schema_to_metadata;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
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

/// The Arrow type a column is recorded as in the file (its `ARROW:schema`, which readers take the types from):
/// text as large strings, lists as large lists of "element" items, as pyarrow recorded polars' `to_arrow()`.
fn recorded_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Utf8View | DataType::Utf8 => DataType::LargeUtf8,
        DataType::List(item) | DataType::LargeList(item) => DataType::LargeList(Arc::new(renamed(item, "element", recorded_type))),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(|f| renamed(f, f.name(), recorded_type)).collect::<Fields>()),
        other => other.clone(),
    }
}

/// The type a column is encoded from: as it came (text views are encoded as the strings they hold, no copy),
/// list items named "element" as pyarrow names them in the Parquet schema.
fn written_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::List(item) => DataType::List(Arc::new(renamed(item, "element", written_type))),
        DataType::LargeList(item) => DataType::LargeList(Arc::new(renamed(item, "element", written_type))),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(|f| renamed(f, f.name(), written_type)).collect::<Fields>()),
        other => other.clone(),
    }
}

fn renamed(field: &FieldRef, name: &str, of: fn(&DataType) -> DataType) -> Field {
    Field::new(name, of(field.data_type()), field.is_nullable())
}

/// `array` typed as `written` (the same buffers, lists' item fields renamed).
fn written_array(array: &ArrayRef, written: &DataType) -> Result<ArrayRef, String> {
    if array.data_type() == written {
        return Ok(array.clone());
    }
    let any = array.as_any();
    match written {
        DataType::LargeList(item) => {
            if let Some(list) = any.downcast_ref::<LargeListArray>() {
                let values = written_array(list.values(), item.data_type())?;
                return Ok(Arc::new(LargeListArray::new(item.clone(), list.offsets().clone(), values, list.nulls().cloned())));
            }
        }
        DataType::List(item) => {
            if let Some(list) = any.downcast_ref::<ListArray>() {
                let values = written_array(list.values(), item.data_type())?;
                return Ok(Arc::new(ListArray::new(item.clone(), list.offsets().clone(), values, list.nulls().cloned())));
            }
        }
        DataType::Struct(fields) => {
            if let Some(table) = any.downcast_ref::<StructArray>() {
                let columns = table
                    .columns()
                    .iter()
                    .zip(fields.iter())
                    .map(|(column, field)| written_array(column, field.data_type()))
                    .collect::<Result<Vec<_>, _>>()?;
                return Ok(Arc::new(StructArray::try_new(fields.clone(), columns, table.nulls().cloned()).map_err(|e| e.to_string())?));
            }
        }
        _ => {}
    }
    Err(format!("a column of type {} cannot be written as {written}", array.data_type()))
}

/// The writer's properties: TableWriter's pyarrow settings (see the module comment), and `recorded` as the
/// file's Arrow schema.
fn properties(recorded: &Schema, compression_level: i32) -> PyResult<WriterProperties> {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(compression_level).map_err(value_error)?))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_statistics_truncate_length(None)
        .set_max_row_group_row_count(Some(MAX_ROW_GROUP_ROWS))
        .set_dictionary_enabled(false);
    for field in recorded.fields() {
        if field.data_type() == &DataType::LargeUtf8 {
            builder = builder.set_column_dictionary_enabled(ColumnPath::from(field.name().as_str()), true);
        }
    }
    let mut properties = builder.build();
    add_encoded_arrow_schema_to_metadata(recorded, &mut properties);
    Ok(properties)
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
                let incoming = batch.schema();
                let written: Vec<Field> = incoming.fields().iter().map(|f| renamed(f, f.name(), written_type)).collect();
                let recorded = Schema::new(incoming.fields().iter().map(|f| renamed(f, f.name(), recorded_type)).collect::<Vec<_>>());
                let schema = Arc::new(Schema::new(written));
                let file = File::create(&self.path).map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", self.path)))?;
                let options = ArrowWriterOptions::new()
                    .with_properties(properties(&recorded, self.compression_level)?)
                    .with_skip_arrow_metadata(true); // recorded by `properties`
                let writer = ArrowWriter::try_new_with_options(file, schema.clone(), options).map_err(value_error)?;
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
            .map(|(column, field)| written_array(column, field.data_type()))
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
