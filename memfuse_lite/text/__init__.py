"""Text analysis shared by ingestion, fusion, retrieval and answers, in English and
Chinese: tokens (jieba + words), entities, names, cue words and content terms
(:mod:`.features`), time expressions in records (:mod:`.timeexpr`) and in questions
(:mod:`.timerange`)."""
