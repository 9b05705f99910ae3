"""What the file reader (``_files.py``) knows of the tokenizer classes without importing their
modules (``SubwordTokenizer.from_file`` imports the reader): the error it raises, and the classes
by the model type of a ``tokenizer.json``, filled in as each class is defined."""


class TokenizerFileError(ValueError):
    """A tokenizer file that cannot be read: names the file and what is wrong with it."""


MODELS: dict = {}   # "BPE" -> BPETokenizer, "WordPiece" -> WordPieceTokenizer
