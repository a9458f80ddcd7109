"""Where the files of a traceset live: a local folder by default, S3 by setting."""
