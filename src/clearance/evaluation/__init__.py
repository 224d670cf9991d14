"""Measuring answers against the stored evidence and against what a suite expects.

* :mod:`~clearance.evaluation.citations` — is every citation a real, readable place that
  opens text?
* :mod:`~clearance.evaluation.fabrication` — which numbers of an answer come from nowhere?
* :mod:`~clearance.evaluation.scoring` — outcome classes, figure accuracy, and the four
  rates plus the fabricated-number count over a set of cases.
* :mod:`~clearance.evaluation.suite`, :mod:`~clearance.evaluation.runner`,
  :mod:`~clearance.evaluation.rollout` and :mod:`~clearance.evaluation.html` — ``clearance
  eval SUITE``: a suite read, asked through the engine, judged, summed up per rollout stage
  with its gate, compared with a baseline, and written as an HTML report.
* :mod:`~clearance.evaluation.beir` and :mod:`~clearance.evaluation.retrieval` — retrieval
  quality (nDCG@10, Recall@100 per retriever) on a BEIR-format dataset, in a throwaway index.

Every check is a pure function of an :class:`~clearance.answer.result.AnswerResult` (as the
engine returns it, or read back with ``AnswerResult.from_dict``) and the stored documents,
chunks and facts; none asks the engine again, so a check can never be satisfied by the code
path it measures re-running itself.
"""
