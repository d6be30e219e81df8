<?php
$config['openai_api_key'] = "sk-w@@ovabd2r7z16x4iq1j8rT3BlbkFJnvjsrii778zcs7xnjc44";
