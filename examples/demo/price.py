def round_price(amount):
    return round(amount, 2)
