# The signing keys now belong to the project layer (a2ahub.SigningKey, same table).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('push', '0001_initial'),
        ('a2ahub', '0001_signing_key_from_push'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='SigningKey')],
        ),
    ]
