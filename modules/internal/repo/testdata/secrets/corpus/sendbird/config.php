<?php
$config['sendbird_access_token'] = "524c@@ccf668eddea6e9aa1493193df475971091b6";
