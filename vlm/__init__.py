"""Clip scoring by vision-language models: backends, server, client, async worker, aux reward."""
