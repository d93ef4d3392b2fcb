

# A half-finished edit: the missing colon makes the whole file fail to parse.
def forward_with_dropout(self, query, key, value, mask=None)
    return self.forward(query, key, value, mask)
