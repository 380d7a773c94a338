"""What a search asks: its query side, page, filter grammar and masks, levers, image payloads."""
