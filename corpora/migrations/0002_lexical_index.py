from django.db import migrations

from corpora.retrieval import schema


class Migration(migrations.Migration):
    dependencies = [("corpora", "0001_initial")]

    operations = [migrations.RunPython(schema.install, schema.uninstall)]
