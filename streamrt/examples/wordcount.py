"""Word count: lines of text in ``text-input``, running counts per word to ``word-counts``.

``streamrt run streamrt.examples.wordcount:app --bootstrap-server HOST:PORT``.
"""

from __future__ import annotations

from streamrt.runtime import App

app = App({"application.id": "wordcount"})

(
    app.stream("text-input", key_serde="str", value_serde="str")
    .flat_map(lambda _key, line: [(word, word) for word in line.lower().split()], key_serde="str")
    .group_by_key(name="words")
    .count(store="word-counts-store")
    .to_stream()
    .to("word-counts", key_serde="str", value_serde="int")
)
