"""Integrations of the client with the ecosystem's frameworks, each an optional extra:
:mod:`~crisscross_client.integrations.langchain` (``crisscross-client[langchain]``) and
:mod:`~crisscross_client.integrations.llamaindex` (``crisscross-client[llamaindex]``).

What they share needs neither framework: the stored documents
(:mod:`~crisscross_client.integrations.stored_documents`), filters
(:mod:`~crisscross_client.integrations.filters`), the service's search levers
(:mod:`~crisscross_client.integrations.search_options`), MMR
(:mod:`~crisscross_client.integrations.mmr`) and the check of a store's collection
(:mod:`~crisscross_client.integrations.collection_schema`).

Tested with langchain-core 1.8.3 (langchain-tests 1.1.9's standard suites) and llama-index-core
0.14.25, against a live service.
"""
