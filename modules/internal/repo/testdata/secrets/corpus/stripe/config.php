<?php
$stripeAccessToken .= 'sk_t@@est_4lob90ody37a0m1dd6rqdm8gpspgez';
