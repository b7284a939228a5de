//! The stored types and row groups of `ParquetFileWriter` (without Python: `write_batch` and `ArrowWriter::flush`).

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, StringViewArray, StructArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::*;

fn views(values: &[Option<&str>]) -> ArrayRef {
    Arc::new(values.iter().copied().collect::<StringViewArray>())
}

#[test]
fn text_views_and_lists_are_stored_as_large_strings_and_large_lists_with_their_values() {
    let path = std::env::temp_dir().join(format!("quicack_parquet_out_{}.parquet", std::process::id()));
    let ranges = StructArray::from(vec![
        (Arc::new(Field::new("low", DataType::Int64, true)), Arc::new(Int64Array::from(vec![1, 5, 9])) as ArrayRef),
        (Arc::new(Field::new("high", DataType::Int64, true)), Arc::new(Int64Array::from(vec![2, 6, 9])) as ArrayRef),
    ]);
    let item = Arc::new(Field::new("item", ranges.data_type().clone(), true));
    let offsets = OffsetBuffer::new(ScalarBuffer::from(vec![0i64, 2, 2, 3]));
    let nulls = Some(arrow_buffer::NullBuffer::from(vec![true, false, true]));
    let lists: ArrayRef = Arc::new(LargeListArray::new(item, offsets, Arc::new(ranges), nulls));
    let batch = |names: &[Option<&str>], numbers: Vec<Option<i64>>, lists: ArrayRef| {
        RecordBatch::try_from_iter(vec![
            ("run_id", views(names)),
            ("packet_number", Arc::new(Int64Array::from(numbers)) as ArrayRef),
            ("ack_ranges", lists),
        ])
        .unwrap()
    };
    let mut writer = ParquetFileWriter::new(path.to_string_lossy().into_owned(), 3);
    // a text longer than a view's 12 inline bytes, a null, an empty text
    writer.write_batch(batch(&[Some("a-run-id-longer-than-twelve"), None, Some("")], vec![Some(1), None, Some(3)], lists.clone())).unwrap();
    writer.open().unwrap().flush().unwrap();
    writer.write_batch(batch(&[Some("b"), Some("b"), Some("c")], vec![Some(4), Some(5), None], lists)).unwrap();
    writer.writer.take().unwrap().close().unwrap();

    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
    assert_eq!(reader.metadata().num_row_groups(), 2);
    let schema = reader.schema().clone();
    assert_eq!(schema.field(0).data_type(), &DataType::LargeUtf8);
    let DataType::LargeList(item) = schema.field(2).data_type() else { panic!("{:?}", schema.field(2)) };
    assert_eq!(item.name(), "element");
    // row-group statistics of the text column (what a reader skips row groups by)
    let stats = reader.metadata().row_group(1).column(0).statistics().unwrap().clone();
    assert_eq!((stats.min_bytes_opt().unwrap(), stats.max_bytes_opt().unwrap()), (&b"b"[..], &b"c"[..]));
    let read: Vec<RecordBatch> = reader.build().unwrap().map(Result::unwrap).collect();
    std::fs::remove_file(&path).unwrap();
    let names: Vec<Option<String>> =
        read.iter().flat_map(|b| b.column(0).as_string::<i64>().iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>()).collect();
    assert_eq!(names, [Some("a-run-id-longer-than-twelve".into()), None, Some("".into()), Some("b".into()), Some("b".into()), Some("c".into())]);
    let numbers: Vec<Option<i64>> = read.iter().flat_map(|b| b.column(1).as_primitive::<Int64Type>().iter().collect::<Vec<_>>()).collect();
    assert_eq!(numbers, [Some(1), None, Some(3), Some(4), Some(5), None]);
    let lists = read[0].column(2).as_list::<i64>();
    assert_eq!((lists.value_length(0), lists.is_null(1), lists.value_length(2)), (2, true, 1));
    let first = lists.value(0);
    let low = first.as_struct().column(0).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(low, [1, 5]);
}
