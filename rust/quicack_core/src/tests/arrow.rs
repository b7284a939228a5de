//! The column builders: each `Column` kind as the Arrow array polars receives (type, values, nulls), and a
//! table through the C data interface and back.

use arrow_array::cast::AsArray;
use arrow_array::ffi::from_ffi;
use arrow_array::types::{Float64Type, Int64Type};

use super::*;

fn ints(array: &ArrayRef) -> Vec<Option<i64>> {
    array.as_primitive::<Int64Type>().iter().collect()
}

fn texts(array: &ArrayRef) -> Vec<Option<String>> {
    array.as_string::<i32>().iter().map(|v| v.map(str::to_string)).collect()
}

#[test]
fn integer_columns_keep_their_values_and_nulls() {
    assert_eq!(ints(&column_array(Column::Int(vec![Some(1), None, Some(-3)]))), [Some(1), None, Some(-3)]);
    let dense = column_array(Column::Dense(vec![4, 5]));
    assert_eq!((ints(&dense), dense.nulls().is_none()), (vec![Some(4), Some(5)], true));
    // the frame walker's unsigned values, as Int64
    assert_eq!(ints(&column_array(Column::Unsigned(vec![Some(7), None]))), [Some(7), None]);
    // sparse: null but at the rows given; a row given twice keeps the last value
    let sparse = column_array(Column::SparseInt(4, vec![(1, 10), (3, 30), (1, 11)]));
    assert_eq!(ints(&sparse), [None, Some(11), None, Some(30)]);
    let full = column_array(Column::SparseInt(2, vec![(0, 1), (1, 2)]));
    assert!(full.nulls().is_none());
}

#[test]
fn float_and_bool_columns() {
    let floats = column_array(Column::Float(vec![Some(0.5), None]));
    assert_eq!(floats.as_primitive::<Float64Type>().iter().collect::<Vec<_>>(), [Some(0.5), None]);
    let sparse = column_array(Column::SparseFloat(3, vec![(2, 25.0)]));
    assert_eq!(sparse.as_primitive::<Float64Type>().iter().collect::<Vec<_>>(), [None, None, Some(25.0)]);
    let bools = column_array(Column::Bool(vec![Some(true), None, Some(false)]));
    assert_eq!(bools.as_boolean().iter().collect::<Vec<_>>(), [Some(true), None, Some(false)]);
}

#[test]
fn text_columns_by_value_by_code_and_shared() {
    const NAMES: [&str; 3] = ["initial", "handshake", "appdata"];
    let text = column_array(Column::Text(vec![Some("a".into()), None, Some(String::new())]));
    assert_eq!(texts(&text), [Some("a".into()), None, Some(String::new())]);
    let names = column_array(Column::Names(&NAMES, vec![Some(2), None, Some(0)]));
    assert_eq!(texts(&names), [Some("appdata".into()), None, Some("initial".into())]);
    let codes = column_array(Column::Codes(&NAMES, vec![1, 1]));
    assert_eq!((texts(&codes), codes.nulls().is_none()), (vec![Some("handshake".into()); 2], true));
    let shared: Arc<str> = Arc::from("odcid");
    assert_eq!(texts(&column_array(Column::Shared(vec![shared.clone(), shared]))), vec![Some("odcid".to_string()); 2]);
    assert_eq!(text.data_type(), &DataType::Utf8);
}

#[test]
fn ack_ranges_are_lists_of_low_high_structs() {
    // rows: [(98, 100), (92, 95)], null, []
    let ranges = column_array(Column::Ranges(vec![2, 2, 2], vec![true, false, true], vec![(98, 100), (92, 95)]));
    let list = ranges.as_list::<i32>();
    assert_eq!((list.len(), list.null_count(), list.value_length(0), list.value_length(2)), (3, 1, 2, 0));
    let pairs = list.value(0);
    let pairs = pairs.as_struct();
    assert_eq!(pairs.column_names(), ["low", "high"]);
    assert_eq!((ints(pairs.column(0)), ints(pairs.column(1))), (vec![Some(98), Some(92)], vec![Some(100), Some(95)]));
}

#[test]
fn tls_message_lists() {
    let lists = column_array(Column::TextList(vec![Some(vec!["client_hello".into()]), None, Some(vec![])]));
    let list = lists.as_list::<i32>();
    assert_eq!((list.null_count(), list.value_length(0), list.value_length(2)), (1, 1, 0));
    assert_eq!(texts(&list.value(0)), [Some("client_hello".to_string())]);
}

#[test]
fn a_table_goes_through_the_c_data_interface_and_back() {
    let mut table = ArrowTable::new(
        vec![
            ("n".to_string(), Column::Dense(vec![1, 2, 3])),
            ("name".to_string(), Column::Text(vec![None, Some("x".into()), None])),
        ],
        3,
    );
    let original = table.take_struct().expect("columns of the table's length");
    assert!(table.take_struct().is_err()); // exported once
    let (array, schema) = to_ffi(&original.to_data()).unwrap();
    // SAFETY: the structs were just exported by arrow-rs itself.
    let back = unsafe { from_ffi(array, &schema) }.unwrap();
    assert_eq!(StructArray::from(back), original);
    let mut short = ArrowTable::new(vec![("n".to_string(), Column::Dense(vec![1]))], 2);
    assert!(short.take_struct().is_err()); // a column of another length
}

#[test]
fn text_as_string_views_short_and_long_with_nulls() {
    const NAMES: [&str; 3] = ["sent", "connection_close", "appdata"]; // one longer than a view holds inline
    let views = |column| {
        let array = column_array(column);
        assert_eq!(array.data_type(), &DataType::Utf8View);
        array.as_string_view().iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>()
    };
    let some = |s: &str| Some(s.to_string());
    assert_eq!(views(Column::CodeViews(&NAMES, vec![1, 0, 1])), [some("connection_close"), some("sent"), some("connection_close")]);
    assert_eq!(views(Column::NameViews(&NAMES, vec![None, Some(2)])), [None, some("appdata")]);
    let texts = vec![some("a twelve chr"), None, some("thirteen char"), some(""), some("[[1,2],[3,4],[5,6]]")];
    assert_eq!(views(Column::TextViews(texts.clone())), texts);
    assert!(column_array(Column::CodeViews(&NAMES, vec![0])).nulls().is_none());
}
