<?php
$config['gcp_api_key'] = "AIza@@i0vwyQVaEz-mLW2oL44O_pwqv_kYpz8BWo-";
