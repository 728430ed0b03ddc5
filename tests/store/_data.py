"""Shared test records for the store tests."""

DOCS = [
    {
        "id": "cat",
        "document": "the cat sat on the mat",
        "metadata": {"kind": "pet", "year": 2020, "tags": ["a"]},
    },
    {"id": "dog", "document": "the dog chased the cat", "metadata": {"kind": "pet", "year": 2022}},
    {"id": "car", "document": "a red car drove past", "metadata": {"kind": "vehicle", "year": 2019}},
    {"id": "bus", "document": "the bus was late again", "metadata": {"kind": "vehicle", "year": 2023}},
    {
        "id": "sky",
        "document": "clouds drift across the sky",
        "metadata": {"kind": "nature", "o": {"z": "deep"}},
    },
]
