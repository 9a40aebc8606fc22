# The signing keys moved from the push app to the project layer; the table stays as it is.

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('push', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='SigningKey',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kid', models.CharField(max_length=64, unique=True)),
                        ('private_pem', models.TextField()),
                        ('public_jwk', models.JSONField()),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('retired_at', models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        'db_table': 'push_signingkey',
                        'ordering': ['-created_at'],
                    },
                ),
            ],
        ),
    ]
