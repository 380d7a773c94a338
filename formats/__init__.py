"""Crisscross data formats: one reader per format, path conventions, hashing (the leaf package).

Every other package reads data files through this one; it imports none of them. Readers raise
:class:`formats.errors.FormatError` (a ``ValueError``) naming the file, the line where the bad
record starts and the reason; writers produce the bytes the real files have.

Public names, by module:

- ``formats.errors``: ``FormatError(reason, *, path=None, line=None)`` with ``.reason``,
  ``.path``, ``.line``.
- ``formats.karpathy`` (``captions_<split>.csv``): ``CAPTION_COLUMNS``; ``CaptionRecord``
  (``sentid, key, image_id, filename, image_index, caption_index, text, raw, row``);
  ``read_captions(path) -> list[CaptionRecord]``; ``write_captions(path, records)``;
  ``ImageEntry`` (``filename, image_id, row, captions``);
  ``images_of_captions(records) -> list[ImageEntry]``; ``is_plain_filename(name)``.
- ``formats.cxc`` (``cxc/<sts|sis|sits>_<split>.csv``): ``RatingKind`` (``STS``, ``SIS``,
  ``SITS``; ``.columns``, ``.header``, ``.collections``, ``.positive_threshold``,
  ``.path(data_dir, split)``); ``Rating`` (``item1, item2, agg_score, sampling_method``);
  ``read_ratings(path, kind=None) -> list[Rating]`` (kind recognised from the header);
  ``rating_kind_of_header(fieldnames)``; ``write_ratings(path, kind, ratings)``.
- ``formats.bison`` (``bison/bison_<split>.csv``, ``bison_shared.csv``): ``BISON_COLUMNS``;
  ``BisonRow`` (``bison_id, caption, image_id_0, image_id_1, true_image_id, true_image_split,
  caption_id, caption_id_source``; ``.other_image_id``); ``read_bison(path)``;
  ``write_bison(path, rows)``.
- ``formats.layout`` (where files lie under a data folder): ``captions_path(data_dir, split)``,
  ``images_dir(data_dir, split)``, ``cxc_path(data_dir, task, split)``,
  ``bison_path(data_dir, split)``, ``default_bison_path(data_dir, split)``,
  ``manifest_path(data_dir)``; folder and file names ``CAPTIONS_DIR``, ``IMAGES_DIR``,
  ``CXC_DIR``, ``BISON_DIR``, ``BISON_SHARED_FILE``, ``MANIFEST_FILE``.
- ``formats.ids`` (item ids): ``caption_key(corpus, sentid)``, ``image_filename(pattern,
  image_id)``, ``coco_image_filename(image_id)``, ``COCO_VAL2014``, ``COCO_VAL2014_PATTERN``,
  ``scenes_caption_key(split, sentid)``, ``scenes_image_filename(split, image_id)``,
  ``scenes_caption_source(split)``, ``infer_filename_pattern(pairs of (filename, image_id))``.
- ``formats.hashing``: ``sha256_file(path)``, ``sha256_files(directory, names)``,
  ``sha256_bytes(data)``.
- ``formats.csv_records`` (used by the readers): ``open_csv(path)`` → ``CsvTable`` with
  ``.header``, ``.records()`` (``CsvRecord(line, number, fields)``), ``.require_columns``,
  ``.integer``, ``.error``.
"""
