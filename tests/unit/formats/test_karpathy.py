"""The Karpathy captions reader and writer: good files, the ``raw`` newline case, and every bad
row refused with its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.errors import FormatError
from formats.karpathy import (
    CAPTION_COLUMNS,
    CaptionRecord,
    ImageEntry,
    images_of_captions,
    is_plain_filename,
    read_captions,
    write_captions,
)

HEADER = ",".join(CAPTION_COLUMNS) + "\r\n"


def _record(row: int, image: int, caption: int, raw: str | None = None) -> CaptionRecord:
    sentid = image * 10 + caption
    text = f"caption {caption} of image {image}"
    return CaptionRecord(
        sentid=sentid,
        key=f"COCO_val2014:sentid:{sentid}",
        image_id=image,
        filename=f"COCO_val2014_{image:012d}.jpg",
        image_index=image - 1,
        caption_index=caption,
        text=text,
        raw=text if raw is None else raw,
        row=row,
    )


RECORDS = [
    _record(0, 1, 0, raw="A caption\nwith a newline  "),
    _record(1, 1, 1),
    _record(2, 2, 0, raw='quotes "inside", and a comma'),
    _record(3, 2, 1),
]


def _write(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "captions_val.csv"
    path.write_bytes((HEADER + "".join(row + "\r\n" for row in rows)).encode("utf-8"))
    return path


def test_written_records_read_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "out" / "captions_val.csv"
    write_captions(path, RECORDS)
    assert read_captions(path) == RECORDS


def test_raw_keeps_its_newline_and_rows_count_records_not_lines(tmp_path: Path) -> None:
    path = tmp_path / "captions_val.csv"
    write_captions(path, RECORDS)
    data = path.read_bytes()
    assert data.startswith(HEADER.encode())
    assert b'"A caption\nwith a newline  "' in data
    records = read_captions(path)
    assert records[0].raw == "A caption\nwith a newline  "
    assert [record.row for record in records] == [0, 1, 2, 3]


def test_a_header_only_file_has_no_captions(tmp_path: Path) -> None:
    assert read_captions(_write(tmp_path)) == []


GOOD = "11,COCO_val2014:sentid:11,1,COCO_val2014_000000000001.jpg,0,1,a dog,a dog"


@pytest.mark.parametrize(
    ("bad_row", "message"),
    [
        ("x,k:2,1,a.jpg,0,0,t,t", "column sentid: 'x' is not an integer"),
        ("2,k:2,one,a.jpg,0,0,t,t", "column image_id: 'one' is not an integer"),
        ("2,k:2,1,a.jpg,first,0,t,t", "column karpathy_image_index: 'first' is not an integer"),
        ("2,k:2,1,a.jpg,0,,t,t", "column caption_index: '' is not an integer"),
        ("2,k:2,1,a.jpg,0,0,t", "expected 8 fields, got 7"),
        ("2,k:2,1,a.jpg,0,0,t,t,extra", "expected 8 fields, got 9"),
        ("2,k:2,1,../a.jpg,0,0,t,t", "file name '../a.jpg' is not a plain name"),
        ("2,k:2,1,,0,0,t,t", "file name '' is not a plain name"),
        ("2,k:2,1,.hidden,0,0,t,t", "file name '.hidden' is not a plain name"),
        (
            "12,COCO_val2014:sentid:11,1,COCO_val2014_000000000001.jpg,0,2,t,t",
            r"caption key 'COCO_val2014:sentid:11' appears twice \(first at line 4\)",
        ),
        ("2,k:2,7,COCO_val2014_000000000001.jpg,0,0,t,t", "disagrees with an earlier row"),
        ("2,k:2,1,other.jpg,0,0,t,t", "disagrees with an earlier row"),
    ],
)
def test_bad_rows_are_refused_with_file_and_line(
    tmp_path: Path, bad_row: str, message: str
) -> None:
    # Lines 2-3 hold one record (a quoted newline), so the bad record starts on line 5.
    first = '10,k:10,1,COCO_val2014_000000000001.jpg,0,0,a cat,"a\r\ncat"'
    path = _write(tmp_path, first, GOOD, bad_row)
    with pytest.raises(FormatError, match=message) as error:
        read_captions(path)
    assert (error.value.path, error.value.line) == (path, 5)
    assert str(error.value).startswith(f"{path}:5: ")


def test_a_missing_column_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "captions.csv"
    path.write_text("sentid,text\n1,a dog\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"missing column\(s\)") as error:
        read_captions(path)
    assert error.value.line == 1
    assert "raw" in error.value.reason


def test_columns_may_come_in_any_order(tmp_path: Path) -> None:
    path = tmp_path / "captions.csv"
    columns = list(reversed(CAPTION_COLUMNS))
    values = {
        "sentid": "5", "cxc_caption_key": "k:5", "image_id": "3", "filename": "x.jpg",
        "karpathy_image_index": "0", "caption_index": "0", "text": "t", "raw": "r",
    }  # fmt: skip
    path.write_text(
        ",".join(columns) + "\n" + ",".join(values[name] for name in columns) + "\n",
        encoding="utf-8",
    )
    assert read_captions(path) == [CaptionRecord(5, "k:5", 3, "x.jpg", 0, 0, "t", "r", 0)]


def test_images_of_captions_in_order_of_first_appearance() -> None:
    images = images_of_captions(RECORDS)
    assert images == [
        ImageEntry(
            filename="COCO_val2014_000000000001.jpg",
            image_id=1,
            row=0,
            captions=("COCO_val2014:sentid:10", "COCO_val2014:sentid:11"),
        ),
        ImageEntry(
            filename="COCO_val2014_000000000002.jpg",
            image_id=2,
            row=1,
            captions=("COCO_val2014:sentid:20", "COCO_val2014:sentid:21"),
        ),
    ]


def test_images_of_captions_refuses_an_image_with_two_ids() -> None:
    clash = CaptionRecord(99, "k:99", 5, RECORDS[0].filename, 0, 0, "t", "t", 4)
    with pytest.raises(FormatError, match="disagrees with an earlier row") as error:
        images_of_captions([*RECORDS, clash])
    assert error.value.path is None


@pytest.mark.parametrize(
    ("name", "plain"),
    [("a.jpg", True), ("", False), ("dir/a.jpg", False), ("/a.jpg", False), (".a", False)],
)
def test_plain_file_names(name: str, plain: bool) -> None:
    assert is_plain_filename(name) is plain
