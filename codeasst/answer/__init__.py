"""`codeasst ask`'s answer, in a room of its own: retrieval's hits made into a lead built without the
model (checking.py: the definitions that answer; flow.py: the chain of calls that does the work),
then the model's explanation held to the excerpts it cites (grounding.py) and to the code graph's
relations (relations.py). ask.py puts them together."""
