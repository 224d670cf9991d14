"""Tests of the LLM providers (issue: LLM providers behind one small protocol)."""
