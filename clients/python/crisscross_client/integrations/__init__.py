"""Integrations of the client with the ecosystem's frameworks, each an optional extra:
:mod:`~crisscross_client.integrations.langchain` (``crisscross-client[langchain]``) and
:mod:`~crisscross_client.integrations.llamaindex` (``crisscross-client[llamaindex]``).

Tested with langchain-core 1.8.3 (langchain-tests 1.1.9's standard suites) and llama-index-core
0.14.25, against a live service.
"""
